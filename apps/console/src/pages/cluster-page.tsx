import { useEffect } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorText, Section, Time } from '../components/bits.js';
import { Table } from '../components/table.js';
import { browserZone, formatSpan, relative } from '../format/time.js';
import { useLoad } from '../load.js';

const REFRESH_MS = 5_000;
/** DESIGN §4: an offset beyond a second is logged as an error; the console flags it too. */
const OFFSET_LIMIT_MS = 1_000;

function Counts({ counts, label }: { counts: Record<string, number>; label: string }) {
  const entries = Object.entries(counts);
  return (
    <dl class="counts" aria-label={label}>
      {entries.map(([state, n]) => (
        <div key={state}>
          <dt>{state}</dt>
          <dd>{n}</dd>
        </div>
      ))}
    </dl>
  );
}

export function ClusterPage() {
  const cluster = useLoad(() => api.cluster.get(), [], REFRESH_MS);
  const zone = browserZone();
  useEffect(() => {
    document.title = 'Cluster · Punctual';
  }, []);
  const c = cluster.data;
  return (
    <main class="page">
      <h1>Cluster</h1>
      <ErrorText error={cluster.error} />
      {!c ? <p class="muted">Loading…</p> : null}
      {c ? (
        <>
          <div class="grid-2">
            <Section title={c.shards.length > 1 ? 'Leader of shard 0' : 'Leader'}>
              <dl class="definition">
                <div class="def-row">
                  <dt>Instance</dt>
                  <dd>{c.leader.instance ?? <span class="status status-dead">no leader</span>}</dd>
                </div>
                <div class="def-row">
                  <dt>Epoch</dt>
                  <dd>{c.leader.epoch}</dd>
                </div>
                <div class="def-row">
                  <dt>Leader since</dt>
                  <dd>
                    <Time at={c.leader.acquiredAt} zone={zone} />
                  </dd>
                </div>
                <div class="def-row">
                  <dt>Last heartbeat</dt>
                  <dd>
                    <Time at={c.leader.heartbeatAt} zone={zone} withRelative />
                  </dd>
                </div>
              </dl>
            </Section>
            <Section title="Queue depth">
              <h3>Executions not finished</h3>
              <Counts counts={c.queue.executions} label="Executions by status" />
              <h3>BullMQ jobs</h3>
              <Counts counts={c.queue.jobs} label="Jobs by state" />
            </Section>
          </div>
          {c.shards.length > 1 ? (
            <Section title="Shards">
              <p class="muted small">
                The tasks are split into {c.shards.length} shards, each led by one scheduler; the leader of each took
                its latest epoch.
              </p>
              <Table
                label="Shard map"
                rows={c.shards}
                rowKey={(s) => s.shard}
                columns={[
                  { title: 'Shard', cell: (s) => s.shard },
                  { title: 'Leader', cell: (s) => s.leader ?? <span class="status status-dead">none</span> },
                  { title: 'Epoch', cell: (s) => s.epoch },
                  { title: 'Last heartbeat', cell: (s) => <Time at={s.heartbeatAt} zone={zone} withRelative /> },
                ]}
              />
            </Section>
          ) : null}
          <Section title="Flow control">
            <p class="muted small">
              The busiest keys tasks share (<code>policy.concurrency</code>, <code>policy.rateLimit</code>): runs in
              progress and runs held back until the key has room.
            </p>
            <Table
              label="Flow-control keys"
              rows={c.flow}
              rowKey={(k) => k.key}
              empty="No run holds or waits on a flow-control key."
              columns={[
                { title: 'Key', cell: (k) => <code>{k.key}</code> },
                { title: 'Running', cell: (k) => k.running },
                { title: 'Waiting', cell: (k) => k.waiting },
              ]}
            />
          </Section>
          <Section title="Workers">
            <Table
              rows={c.workers}
              rowKey={(w) => w.instance}
              empty="No live worker: nothing will run until one starts."
              columns={[
                { title: 'Instance', cell: (w) => w.instance },
                {
                  title: 'Handlers',
                  cell: (w) =>
                    w.handlers.map((h) => (
                      <code key={h} class="chip">
                        {h}
                      </code>
                    )),
                },
                { title: 'Concurrency', cell: (w) => w.concurrency ?? '—' },
                { title: 'Last seen', cell: (w) => (w.seenAt ? relative(w.seenAt) : '—') },
              ]}
            />
          </Section>
          <Section title="History">
            <p>
              Ended runs are kept <strong>{c.retention.history}</strong>, dead letters{' '}
              <strong>{c.retention.deadLetters}</strong>, audit entries <strong>{c.retention.audit}</strong>, each from
              its slot; older ones are removed by the leader, a whole day at a time.
              {c.retention.oldestSlot ? (
                <>
                  {' '}
                  The oldest slot kept is <Time at={c.retention.oldestSlot} zone={zone} />.
                </>
              ) : null}
            </p>
            {c.retention.namespaces.length ? (
              <Table
                rows={c.retention.namespaces}
                rowKey={(n) => n.namespace}
                empty=""
                columns={[
                  { title: 'Namespace', cell: (n) => n.namespace },
                  { title: 'Runs kept', cell: (n) => n.history },
                  { title: 'Dead letters kept', cell: (n) => n.deadLetters },
                ]}
              />
            ) : null}
          </Section>
          <Section title="Clock offsets">
            <p class="muted small">Each process's clock minus Postgres' clock, which every process corrects by.</p>
            <Table
              rows={c.clockOffsets}
              rowKey={(o) => `${o.role}:${o.instance}`}
              empty="No process has published its offset."
              columns={[
                { title: 'Role', cell: (o) => o.role },
                { title: 'Instance', cell: (o) => o.instance },
                {
                  title: 'Offset',
                  cell: (o) => (
                    <>
                      {o.offsetMs >= 0 ? '+' : ''}
                      {formatSpan(o.offsetMs)}
                      {Math.abs(o.offsetMs) > OFFSET_LIMIT_MS ? (
                        <span class="status status-dead"> beyond 1 s</span>
                      ) : null}
                    </>
                  ),
                },
                { title: 'Measured', cell: (o) => <Time at={o.measuredAt} zone={zone} /> },
              ]}
            />
          </Section>
        </>
      ) : null}
    </main>
  );
}
