/** `${NAME}`, or `$${…}` for a literal `${…}`. */
const REFERENCE = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface Substituted {
  value: unknown;
  /** Paths of the strings that took a value from the environment. */
  paths: (string | number)[][];
  /** The values taken from the environment. */
  values: string[];
  /** References to variables `env` does not have, by where they are. */
  missing: { path: (string | number)[]; variable: string }[];
}

/**
 * A copy of a parsed document with `${NAME}` in its string values replaced by `env.NAME`. Keys are
 * left alone, and so is everything a variable's value contains (no second round). Pure: the caller
 * passes the environment.
 */
export function substituteEnv(input: unknown, env: Record<string, string | undefined>): Substituted {
  const out: Substituted = { value: undefined, paths: [], values: [], missing: [] };
  const walk = (value: unknown, path: (string | number)[]): unknown => {
    if (typeof value === 'string') {
      let used = false;
      const replaced = value.replace(REFERENCE, (whole, escaped: string, name: string) => {
        if (escaped) return whole.slice(1);
        const found = env[name];
        if (found === undefined) {
          out.missing.push({ path, variable: name });
          return whole;
        }
        used = true;
        if (found !== '') out.values.push(found);
        return found;
      });
      if (used) out.paths.push(path);
      return replaced;
    }
    if (Array.isArray(value)) return value.map((item, i) => walk(item, [...path, i]));
    if (value !== null && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, [...path, k])]));
    return value;
  };
  out.value = walk(input, []);
  return out;
}
