import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, KNOWN_ENV_NAMES, loadConfig } from '../../libs/config/src/index.js';

const ROOT = join(import.meta.dirname, '..', '..');

interface Row {
  name: string;
  fallback: string;
  allowed: string;
}

/** The rows of docs/configuration.md's table: variable, default, allowed, meaning. */
function documentedRows(): Row[] {
  const text = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
  return text
    .split('\n')
    .filter((line) => /^\| `[A-Z_]+` \|/.test(line))
    .map((line) => {
      const [name = '', fallback = '', allowed = ''] = line
        .slice(1)
        .split(' | ')
        .map((cell) => cell.trim());
      return { name: name.replaceAll('`', ''), fallback, allowed };
    });
}

/** A production environment that passes, so one variable at a time can be tried. */
const BASE = { NODE_ENV: 'production', ADMIN_API_KEY: 'a-key-of-sixteen-chars' };
const accepts = (name: string, value: string): boolean => {
  try {
    loadConfig({ ...BASE, [name]: value });
    return true;
  } catch (error) {
    if (error instanceof ConfigError) return false;
    throw error;
  }
};
const number = (text: string) => Number(text.replaceAll(',', ''));

describe('docs/configuration.md', () => {
  const rows = documentedRows();

  it('documents exactly the variables the configuration reads, each once', () => {
    expect(rows.map((r) => r.name).sort()).toEqual([...KNOWN_ENV_NAMES].sort());
  });

  it('states each whole-number range the configuration enforces: both ends accepted, one past each refused', () => {
    const ranged = rows.filter((r) => /^[\d,]+–[\d,]+$/.test(r.allowed));
    expect(ranged.length, 'every whole-number variable has its range').toBe(16);
    for (const { name, allowed } of ranged) {
      const [low, high] = allowed.split('–').map(number) as [number, number];
      expect([accepts(name, String(low)), accepts(name, String(high))], `${name} ${allowed}`).toEqual([true, true]);
      expect([accepts(name, String(low - 1)), accepts(name, String(high + 1))], `${name} ${allowed}`).toEqual([
        false,
        false,
      ]);
    }
  });

  it('states the default of each whole-number variable', () => {
    const config = loadConfig(BASE) as unknown as Record<string, unknown>;
    const numeric = rows.filter((r) => /^`\d+`$/.test(r.fallback));
    expect(numeric.length, 'every whole-number variable has its default').toBe(16);
    const byName = new Map(
      Object.entries(config).map(([key, value]) => [key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase(), value]),
    );
    // The loaded config names each variable in camelCase (LEADER_TTL_MS is leaderTtlMs).
    for (const { name, fallback } of numeric) expect(String(byName.get(name)), name).toBe(fallback.replaceAll('`', ''));
  });
});
