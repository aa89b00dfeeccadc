-- Sharded scheduling: one fencing row per shard. Row `id` = shard + 1, so row 1 is shard 0 — the
-- only shard of an unsharded cluster, as before. The cluster's shard count is set once, on row 1,
-- by the first scheduler that starts; a scheduler started with another count refuses to start.
ALTER TABLE "scheduler_state" DROP CONSTRAINT "scheduler_state_singleton";
ALTER TABLE "scheduler_state" ADD CONSTRAINT "scheduler_state_shard" CHECK ("id" BETWEEN 1 AND 256);
ALTER TABLE "scheduler_state" ADD COLUMN "shards" INTEGER;
ALTER TABLE "scheduler_state" ADD CONSTRAINT "scheduler_state_shards" CHECK ("shards" IS NULL OR ("id" = 1 AND "shards" BETWEEN 1 AND 256));
