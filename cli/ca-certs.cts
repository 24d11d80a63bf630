// bin/pdb-env starts pdb-env's process without NODE_EXTRA_CA_CERTS (Node 20 parses that bundle at
// every start, and pdb-env itself makes no TLS connection); what pdb-env runs gets it back. Called
// first by start.cjs and by bin.js (which tests and the harness run directly); once is enough.
export function restoreCaCerts(env: NodeJS.ProcessEnv = process.env): void {
  const caCerts = env.PDB_ENV_NODE_EXTRA_CA_CERTS;
  if (caCerts === undefined) return;
  env.NODE_EXTRA_CA_CERTS = caCerts;
  delete env.PDB_ENV_NODE_EXTRA_CA_CERTS;
}
