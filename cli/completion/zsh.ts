// The zsh completion script: _arguments per command, with descriptions; session and environment
// names looked up at completion time by `pdb-env __complete`.
import type { CommandSpec, CompletionSpec, OptionSpec, ValueKind } from './spec.js';
import { quote } from './bash.js';

function action(kind: ValueKind, spec: CompletionSpec): string {
  switch (kind) {
    case 'session':
      return '_pdb_env_sessions';
    case 'env':
      return '_pdb_env_envs';
    case 'backend':
      return `(${spec.backends.join(' ')})`;
    case 'shell':
      return `(${spec.shells.join(' ')})`;
    case 'subcommand':
      return `(${spec.commands.map((c) => c.name).join(' ')})`;
    case 'dir':
      return '_files -/';
    case 'file':
      return '_files';
    case 'program':
      return '_pdb_env_program';
    case 'any':
      return ' ';
    default: {
      const never: never = kind;
      throw new Error(`unknown kind ${String(never)}`);
    }
  }
}

/** One _arguments spec: `'--from[source directory]:dir:_files -/'`, both forms of `-h, --help`. */
function optionArg(o: OptionSpec, spec: CompletionSpec): string {
  const value = o.value ? `:${o.value}:${action(o.value, spec)}` : '';
  if (!o.short) return quote(`${o.long}[${o.description}]${value}`);
  return `${quote(`(${o.short} ${o.long})`)}{${o.short},${o.long}}${quote(`[${o.description}]${value}`)}`;
}

function commandArgs(c: CommandSpec, spec: CompletionSpec): string {
  const args = [...c.options, ...spec.global].map((o) => optionArg(o, spec));
  c.operands.forEach((kind, i) => {
    const last = c.variadic && i === c.operands.length - 1;
    if (kind === 'program') args.push(quote('*::command:_pdb_env_program'));
    else args.push(quote(`${last ? '*' : i + 1}:${kind}:${action(kind, spec)}`));
  });
  return `    ${c.name}) _arguments -s ${args.join(' \\\n        ')} ;;`;
}

export function zshScript(spec: CompletionSpec, self: readonly string[]): string {
  const described = spec.commands.map((c) => quote(`${c.name}:${c.summary}`)).join('\n    ');
  return `#compdef pdb-env
# pdb-env completion for zsh. Load it with
#   eval "$(pdb-env completion zsh)"            (in ~/.zshrc, after compinit)
# or save it as _pdb-env in a directory of $fpath.

# Names the store knows ($1: sessions or envs), of the --store given before or after the command.
_pdb_env_names() {
  local -a prog store
  prog=(pdb-env)
  (( $+commands[pdb-env] )) || prog=(${self.map(quote).join(' ')})
  local i=\${words[(i)--store]}
  if (( i < $#words )); then store=(--store "\${words[i+1]}")
  elif [[ -n $_pdb_env_store ]]; then store=(--store "$_pdb_env_store"); fi
  "\${prog[@]}" __complete "$1" "\${store[@]}" 2>/dev/null
}
# After run NAME: "--", then the command as if typed alone.
_pdb_env_program() {
  local i=\${words[(i)--]}
  if (( i < CURRENT )); then
    shift $i words
    (( CURRENT -= i ))
    _normal
  else
    compadd -- --
  fi
}
_pdb_env_sessions() { local -a names; names=(\${(f)"$(_pdb_env_names sessions)"}); _describe -t sessions session names; }
_pdb_env_envs() { local -a names; names=(\${(f)"$(_pdb_env_names envs)"}); _describe -t envs environment names; }

_pdb_env() {
  local curcontext="$curcontext" state line
  local -a commands
  commands=(
    ${described}
  )
  _arguments -C -A '-*' ${spec.global.map((o) => optionArg(o, spec)).join(' ')} '(-v --version)'{-v,--version}'[print the version]' \\
    '1:command:->command' '*::arg:->args'
  local _pdb_env_store=\${opt_args[--store]}
  case $state in
    command) _describe -t commands 'pdb-env command' commands ;;
    args)
      case $line[1] in
${spec.commands.map((c) => commandArgs(c, spec)).join('\n')}
      esac
      ;;
  esac
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _pdb_env "$@"
else
  compdef _pdb_env pdb-env
fi
`;
}
