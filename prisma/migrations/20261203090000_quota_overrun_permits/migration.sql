-- A handler running on after its run ended holds a permit of each capacity its run took: its
-- concurrency key's, and its namespace's `maxConcurrentRuns` (key `#quota/<namespace>`, which no
-- task's key can be). One attempt may hold both: the key is part of the permit's identity.
-- The table holds a row per handler overrunning at the moment (a few): the new key is built at once.
ALTER TABLE "overrun_permit" DROP CONSTRAINT "overrun_permit_pkey";
ALTER TABLE "overrun_permit" ADD CONSTRAINT "overrun_permit_pkey" PRIMARY KEY ("attempt_id", "key");
