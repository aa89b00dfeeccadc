-- Each shard's leadership history: who led it under which epoch, from when, last seen leading
-- (its heartbeat), and when it stepped down cleanly. The gaps between one leadership's end and the
-- next one's start are the times no scheduler led the shard: what explains a slot that was not
-- planned or fired in time (`no_leader`).
CREATE TABLE "shard_leadership" (
    "shard" INTEGER NOT NULL,
    "epoch" BIGINT NOT NULL,
    "leader_id" TEXT NOT NULL,
    "acquired_at" TIMESTAMPTZ(3) NOT NULL,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,
    "released_at" TIMESTAMPTZ(3),

    CONSTRAINT "shard_leadership_pkey" PRIMARY KEY ("shard", "epoch")
);

-- A shard's leaderships around an instant.
CREATE INDEX "shard_leadership_shard_acquired_idx" ON "shard_leadership" ("shard", "acquired_at");
