// "Did you mean": the nearest name of a known set, by edit distance (insert, delete, substitute,
// swap two neighbours), as commander suggests options. Only a near miss is suggested: at most a
// third of the name's length in edits, so "overlya" finds overlay and "zfs" finds nothing.

/** Edit distance with adjacent transpositions (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/** The known names nearest to `name` (ties all kept, in the given order), or none when no name is near. */
export function didYouMean(name: string, known: readonly string[]): string[] {
  const limit = Math.max(1, Math.floor(name.length / 3));
  const scored = known.map((k) => ({ k, d: editDistance(name.toLowerCase(), k.toLowerCase()) })).filter((x) => x.d <= limit);
  const best = Math.min(...scored.map((x) => x.d));
  return scored.filter((x) => x.d === best).map((x) => x.k);
}

/** "Did you mean overlay? " for a hint, or "" when nothing is near. */
export function didYouMeanText(name: string, known: readonly string[]): string {
  const near = didYouMean(name, known);
  return near.length ? `Did you mean ${near.join(' or ')}? ` : '';
}
