-- A concurrency key's permit that outlives its run (DESIGN §5 "Flow control"): a handler that runs
-- on after its run was cancelled, replaced, timed out or taken over still holds one of the key's
-- permits until it really ends. The cancel moves the permit here in its own statement; the worker
-- where the handler runs on renews it like a lease and drops it when the handler settles. A
-- worker that dies leaves it to lapse at `until`.
CREATE TABLE "overrun_permit" (
    "attempt_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "execution_id" UUID NOT NULL,
    "until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "overrun_permit_pkey" PRIMARY KEY ("attempt_id")
);

-- The permits of a key, counted beside its running runs.
CREATE INDEX "overrun_permit_key_until_idx" ON "overrun_permit" ("key", "until");
