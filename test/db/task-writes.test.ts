import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { NamespaceGoneError } from '../../libs/db/src/index.js';
import { useRepositorySandbox } from '../support/api-sandbox.js';

/**
 * A task written into a namespace deleted after the quota check let it in (a race no request can
 * time): Postgres refuses the insert on the foreign key, and the repository answers
 * NamespaceGoneError — a 404 for the API — whether the row went through Prisma's model or the
 * batch's raw statement. The race is made exact with a trigger that deletes the namespace just
 * before the row is inserted.
 */
describe('writing a task into a namespace deleted meanwhile', () => {
  const ctx = useRepositorySandbox();

  beforeAll(async () => {
    await ctx.client.query(`
      INSERT INTO namespace (name) VALUES ('racing');
      CREATE FUNCTION delete_namespace_first() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN DELETE FROM namespace WHERE name = split_part(NEW.name, '/', 1); RETURN NEW; END $$;
      CREATE TRIGGER delete_namespace_first BEFORE INSERT ON task FOR EACH ROW
        WHEN (NEW.name LIKE 'racing/%') EXECUTE FUNCTION delete_namespace_first();`);
  });

  it('is NamespaceGoneError through the model (create) and through the batch (insertMany)', async () => {
    const created = ctx.db.tasks.create({
      name: 'racing/one',
      handler: 'noop',
      scheduleKind: 'cron',
      cron: '0 9 * * *',
      secret: 's',
    });
    await expect(created).rejects.toBeInstanceOf(NamespaceGoneError);

    // The failed insert took its trigger's delete with it: the namespace is there for the next race.
    const model = await ctx.db.tasks.create({
      name: 'a-model',
      handler: 'noop',
      scheduleKind: 'cron',
      cron: '0 9 * * *',
      secret: 's',
    });
    const batch = ctx.db.prisma.$transaction((tx) =>
      ctx.db.tasks.insertMany([{ ...model, id: randomUUID(), name: 'racing/two' }], tx),
    );
    await expect(batch).rejects.toBeInstanceOf(NamespaceGoneError);
    expect(await ctx.db.tasks.findByName('racing/two')).toBeNull();
    expect((await ctx.client.query(`SELECT 1 FROM namespace WHERE name = 'racing'`)).rowCount).toBe(1);
  });
});
