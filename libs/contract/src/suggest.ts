/**
 * The edit distance of `a` and `b`, ignoring case (optimal string alignment: an insertion, a
 * deletion, a substitution or a swap of two neighbours costs 1): `timezon` and `tiemzone` are both
 * 1 from `timezone`.
 */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Three rows of the table are enough: a swap looks two rows back.
  let before: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const current = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      current.push(best);
    }
    before = previous;
    previous = current;
  }
  return previous[t.length]!;
}

/**
 * The known name nearest to `word`, for a "did you mean …?": the first of the closest `known`
 * names, if it is within a third of `word`'s length (at least 1) — beyond that a suggestion is a
 * guess that misleads more than it helps. Undefined when none is that close.
 */
export function nearestName(word: string, known: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(word.length / 3));
  let nearest: string | undefined;
  let nearestDistance = limit + 1;
  for (const name of known) {
    const distance = editDistance(word, name);
    if (distance < nearestDistance) [nearest, nearestDistance] = [name, distance];
  }
  return nearest;
}
