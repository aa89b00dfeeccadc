import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { ROOT } from './manifests.js';

/** `npm ci` installs exactly the lock file: it must be complete, and agree with package.json and the Node version the project runs on. */
type Locked = {
  version?: string;
  engines?: { node?: string } | string[];
  deprecated?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};
type Manifest = {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Manifest;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Locked> };
const installed = Object.entries(lock.packages).filter(([path]) => path !== '');

/** Where Node would find `name` from the package at `from` (node_modules up the tree), in the lock. */
function resolve(from: string, name: string): Locked | undefined {
  for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
    const found = lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`];
    if (found || dir === '') return found;
  }
}

/** The lowest Node version `engines` allows. */
const lowestNode = semver.minVersion(manifest.engines.node)!.version;

describe('the lock file', () => {
  it('records exactly the dependencies package.json declares', () => {
    const root = lock.packages['']! as Locked & { devDependencies?: Record<string, string> };
    expect(root.dependencies).toEqual(manifest.dependencies);
    expect(root.devDependencies).toEqual(manifest.devDependencies);
  });

  it("holds every package's dependencies, including every platform's optional binaries (npm ci on any platform)", () => {
    const missing: string[] = [];
    for (const [path, entry] of installed) {
      for (const name of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})]) {
        if (!resolve(path, name)) missing.push(`${path} → ${name}`);
      }
    }
    expect(missing).toEqual([]);
    // The packages whose absence broke `npm ci` before: every platform's build is locked.
    expect(installed.filter(([path]) => path.startsWith('node_modules/@swc/core-')).length).toBeGreaterThanOrEqual(10);
    expect(
      installed.filter(([path]) => path.startsWith('node_modules/@msgpackr-extract/')).length,
    ).toBeGreaterThanOrEqual(6);
  });

  it(`locks only packages that run on the lowest Node that engines allows (${manifest.engines.node}) and none that is deprecated`, () => {
    const refused = installed
      .filter(
        ([, entry]) =>
          !Array.isArray(entry.engines) && entry.engines?.node && !semver.satisfies(lowestNode, entry.engines.node),
      )
      .map(([path, entry]) => `${path}@${entry.version} wants node ${(entry.engines as { node: string }).node}`);
    expect(refused).toEqual([]);
    expect(installed.filter(([, entry]) => entry.deprecated).map(([path]) => path)).toEqual([]);
  });

  it('agrees with the Node of the image and of this machine', () => {
    const image = /^FROM node:(\d+)/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1]!;
    expect(
      semver.satisfies(`${image}.99.0`, manifest.engines.node) ||
        semver.intersects(`${image}.x`, manifest.engines.node),
    ).toBe(true);
    expect(semver.satisfies(process.versions.node, manifest.engines.node)).toBe(true);
  });
});
