// `pdb-env keys`: the public half of the key this host signs receipts with (made on first use,
// kept outside any project), so a policy can name it (signers: [keyid]) and a reader can tell
// this host's receipts from another signer's.
import { loadSigningKey, SIGNING_KEY_ENV } from '../../model/signing/key-store.js';
import { emit } from '../output.js';
import type { CommandDefinitions, DefineCommand } from '../context.js';

const keys: DefineCommand<'keys'> = (cmd) =>
  cmd
    .addHelpText(
      'after',
      `
Prints the keyid (sha256 of the public key's DER, hex) and the public key (PEM) of the
ed25519 key that signs this host's receipts: ${SIGNING_KEY_ENV} when set (a CI secret
holding a PKCS#8 PEM), else the host's key under $XDG_CONFIG_HOME/pdb-env/keys
(~/.config/pdb-env/keys), made on first use, readable by its owner only. A policy's
"signers" names keyids; pdb-env report lists each receipt's signers.

Example:
  pdb-env keys --json`,
    )
    .action((_o, command) => {
      const o = command.optsWithGlobals();
      const key = loadSigningKey();
      const publicKey = key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const source = key.source === 'env' ? SIGNING_KEY_ENV : key.file;
      emit(o.json === true, { keyid: key.keyid, source: key.source, file: key.file, publicKey }, () =>
        [`keyid: ${key.keyid}`, `from: ${source}`, publicKey.trimEnd()].join('\n'),
      );
    });

export const commands: CommandDefinitions<'keys'> = { keys };
