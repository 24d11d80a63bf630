// The fish completion script: `complete` lines per command and option; session and environment
// names looked up at completion time by `pdb-env __complete`.
import type { CompletionSpec, OptionSpec, ValueKind } from './spec.js';
import { quote } from './bash.js';

/** What fish offers for a value: `-x -a '(...)'` for names and words, `-r -F` for paths. */
function values(kind: ValueKind, spec: CompletionSpec): string {
  switch (kind) {
    case 'session':
      return `-x -a ${quote('(__pdb_env_names sessions)')}`;
    case 'env':
      return `-x -a ${quote('(__pdb_env_names envs)')}`;
    case 'backend':
      return `-x -a ${quote(spec.backends.join(' '))}`;
    case 'shell':
      return `-x -a ${quote(spec.shells.join(' '))}`;
    case 'subcommand':
      return `-x -a ${quote(spec.commands.map((c) => c.name).join(' '))}`;
    case 'dir':
      return `-x -a ${quote('(__fish_complete_directories)')}`;
    case 'file':
    case 'program':
      return '-r -F';
    case 'any':
      return '-x';
    default: {
      const never: never = kind;
      throw new Error(`unknown kind ${String(never)}`);
    }
  }
}

function optionLine(condition: string, o: OptionSpec, spec: CompletionSpec): string {
  const short = o.short ? ` -s ${o.short.slice(1)}` : '';
  const value = o.value ? ` ${values(o.value, spec)}` : '';
  return `complete -c pdb-env -n ${quote(condition)} -l ${o.long.slice(2)}${short}${value} -d ${quote(o.description)}`;
}

export function fishScript(spec: CompletionSpec, self: readonly string[]): string {
  const lines: string[] = [];
  for (const c of spec.commands) {
    lines.push(`complete -c pdb-env -n '__pdb_env_command ""' -a ${c.name} -d ${quote(c.summary)}`);
    for (const o of c.options) lines.push(optionLine(`__pdb_env_command ${c.name}`, o, spec));
    if (c.operands.includes('program'))
      lines.push(
        `complete -c pdb-env -n ${quote(`__pdb_env_command ${c.name}; and contains -- -- (commandline -opc)`)} -x -a ${quote(`(__fish_complete_subcommand --fcs-skip=${c.operands.indexOf('program') + 2})`)}`,
      );
    const first = c.operands[0];
    if (first && first !== 'any' && first !== 'program')
      lines.push(`complete -c pdb-env -n ${quote(`__pdb_env_command ${c.name}; and __pdb_env_operands 0`)} ${values(first, spec)}`);
  }
  for (const o of spec.global) lines.push(optionLine('true', o, spec));
  // Options whose next token is their value, not a command or an operand.
  const valued = [
    ...new Set([...spec.commands.flatMap((c) => c.options), ...spec.global].filter((o) => o.value).map((o) => o.long)),
  ].sort();
  return `# pdb-env completion for fish. Load it with
#   pdb-env completion fish | source
# or save it: pdb-env completion fish > ~/.config/fish/completions/pdb-env.fish

# The tokens before the cursor, less the program, options and their values.
function __pdb_env_words
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip 0
    for tok in $tokens
        if test $skip = 1
            set skip 0
        else if string match -q -r -- ${quote(`^(${valued.join('|')})$`)} $tok
            set skip 1
        else if not string match -q -- '-*' $tok
            echo $tok
        end
    end
end

# True when the command on the line is $argv[1] ("" before there is one).
function __pdb_env_command
    set -l words (__pdb_env_words)
    test (count $words) -eq 0; and test -z "$argv[1]"; and return 0
    test (count $words) -gt 0; and test "$words[1]" = "$argv[1]"
end

# True when the command has exactly $argv[1] operands so far.
function __pdb_env_operands
    set -l words (__pdb_env_words)
    test (math (count $words) - 1) -eq $argv[1]
end

function __pdb_env_names
    set -l tokens (commandline -opc)
    set -l prog $tokens[1]
    command -q $prog; or set prog ${self.map(quote).join(' ')}
    set -l store
    set -l i (contains -i -- --store $tokens); and set store --store $tokens[(math $i + 1)]
    $prog __complete $argv[1] $store 2>/dev/null
end

complete -c pdb-env -f
${lines.join('\n')}
complete -c pdb-env -n '__pdb_env_command ""' -s v -l version -d 'print the version'
`;
}
