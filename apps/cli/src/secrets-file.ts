import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { TaskApplyItem } from '@punctual/contract';

/**
 * Where `apply --secrets-file` keeps the signing secrets of the tasks it creates (the API shows a
 * task's secret once, on create; the CLI never prints it). A JSON object by task name, written with
 * mode 600; secrets already in it are kept. Checked before anything is applied, so that a secret is
 * not created and then lost to an unwritable file.
 */
export class SecretsFile {
  private readonly secrets: Record<string, string>;

  constructor(private readonly path: string) {
    this.secrets = existsSync(path) ? this.read() : {};
    this.write();
  }

  /** Adds the secrets of the tasks just created. */
  add(items: TaskApplyItem[]): void {
    const created = items.filter((item) => item.secret !== undefined);
    if (created.length === 0) return;
    for (const item of created) this.secrets[item.name] = item.secret!;
    this.write();
  }

  private read(): Record<string, string> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(this.path, 'utf8'));
    } catch (error) {
      throw new Error(`--secrets-file ${this.path}: not a JSON object of task secrets (${(error as Error).message})`);
    }
    if (
      parsed === null ||
      typeof parsed !== 'object' ||
      Array.isArray(parsed) ||
      Object.values(parsed).some((v) => typeof v !== 'string')
    ) {
      throw new Error(`--secrets-file ${this.path}: not a JSON object of task secrets`);
    }
    return parsed as Record<string, string>;
  }

  private write(): void {
    try {
      writeFileSync(this.path, `${JSON.stringify(this.secrets, null, 2)}\n`, { mode: 0o600 });
      chmodSync(this.path, 0o600);
    } catch (error) {
      throw new Error(
        `--secrets-file ${this.path}: cannot write it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      );
    }
  }
}
