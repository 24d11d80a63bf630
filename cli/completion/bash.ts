// The bash completion script: commands, each command's options, option values (session and
// environment names looked up at completion time by `pdb-env __complete`, backends, shells,
// paths), and operands by position. Plain bash (no bash-completion package needed).
import type { CommandSpec, CompletionSpec, ValueKind } from './spec.js';

export const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function optionWords(c: CommandSpec | null, spec: CompletionSpec): string {
  return [...(c?.options ?? []), ...spec.global].flatMap((o) => (o.short ? [o.short, o.long] : [o.long])).join(' ');
}

function cases(lines: string[], indent = '    '): string {
  return lines.map((l) => `${indent}${l}`).join('\n');
}

/** Per command: the options, what each option's value is, what each operand is. */
function tables(spec: CompletionSpec): { options: string[]; values: string[]; operands: string[] } {
  const options = [`"") echo ${quote(optionWords(null, spec) + ' --version -v')} ;;`];
  const values: string[] = [];
  const operands: string[] = [];
  for (const c of spec.commands) {
    options.push(`${c.name}) echo ${quote(optionWords(c, spec))} ;;`);
    for (const o of c.options) if (o.value) values.push(`${quote(`${c.name} ${o.long}`)}) echo ${o.value} ;;`);
    c.operands.forEach((kind, i) => {
      const last = i === c.operands.length - 1 && c.variadic;
      if (kind !== 'any') operands.push(`${quote(`${c.name} ${i}`)}${last ? '|' + quote(c.name + ' ') + '*' : ''}) echo ${kind} ;;`);
    });
  }
  for (const o of spec.global) if (o.value) values.push(`*${quote(` ${o.long}`)}) echo ${o.value} ;;`);
  return { options, values, operands };
}

function kinds(spec: CompletionSpec): string {
  const words: Record<Exclude<ValueKind, 'session' | 'env' | 'dir' | 'file' | 'program' | 'any'>, string> = {
    backend: spec.backends.join(' '),
    shell: spec.shells.join(' '),
    subcommand: spec.commands.map((c) => c.name).join(' '),
  };
  return cases([
    'session) COMPREPLY=($(compgen -W "$(_pdb_env_names sessions "$3")" -- "$2")) ;;',
    'env) COMPREPLY=($(compgen -W "$(_pdb_env_names envs "$3")" -- "$2")) ;;',
    ...Object.entries(words).map(([k, w]) => `${k}) COMPREPLY=($(compgen -W ${quote(w)} -- "$2")) ;;`),
    'dir) COMPREPLY=($(compgen -d -- "$2")) ;;',
    'file) COMPREPLY=($(compgen -f -- "$2")) ;;',
    'program) compopt -o default 2>/dev/null; COMPREPLY=() ;;',
    '*) COMPREPLY=() ;;',
  ]);
}

export function bashScript(spec: CompletionSpec, self: readonly string[]): string {
  const t = tables(spec);
  return `# pdb-env completion for bash. Load it with
#   eval "$(pdb-env completion bash)"          (in ~/.bashrc)
# or save it: pdb-env completion bash > ~/.local/share/bash-completion/completions/pdb-env

# Names the store knows ($1: sessions or envs; $2: the --store given on the line).
_pdb_env_names() {
  local -a prog=("\${COMP_WORDS[0]}")
  type -P -- "\${COMP_WORDS[0]}" >/dev/null 2>&1 || prog=(${self.map(quote).join(' ')})
  "\${prog[@]}" __complete "$1" \${2:+--store "$2"} 2>/dev/null
}

_pdb_env_options() {
  case "$1" in
${cases(t.options)}
  esac
}

# What the value of option $2 of command $1 is (nothing: it takes no value).
_pdb_env_value() {
  case "$1 $2" in
${cases(t.values)}
  esac
}

# What operand $2 (from 0) of command $1 is.
_pdb_env_operand() {
  case "$1 $2" in
${cases(t.operands)}
  esac
}

# Complete word $2 as a $1 (with store $3).
_pdb_env_kind() {
  case "$1" in
${kinds(spec)}
  esac
}

_pdb_env() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" cmd="" store="" operand=0 i w kind
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    if [[ $w == -- ]]; then
      # run NAME -- CMD ARGS: a command name first, then what readline would complete.
      if [[ $cmd == run ]]; then
        if ((i == COMP_CWORD - 1)); then COMPREPLY=($(compgen -c -- "$cur")); else _pdb_env_kind program; fi
        return
      fi
    elif [[ $w == -* ]]; then
      kind="$(_pdb_env_value "$cmd" "$w")"
      [[ -z $kind ]] && continue
      ((i++))
      [[ \${COMP_WORDS[i]} == = ]] && ((i++)) # --store=DIR, split at "=" by readline
      [[ $w == --store ]] && store="\${COMP_WORDS[i]}"
      if ((i >= COMP_CWORD)); then _pdb_env_kind "$kind" "$cur" "$store"; return; fi
    elif [[ -z $cmd ]]; then
      cmd="$w"
    else
      ((operand++))
    fi
  done
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_pdb_env_options "$cmd")" -- "$cur"))
  elif [[ -z $cmd ]]; then
    _pdb_env_kind subcommand "$cur"
  else
    _pdb_env_kind "$(_pdb_env_operand "$cmd" "$operand")" "$cur" "$store"
  fi
}

complete -F _pdb_env pdb-env
`;
}
