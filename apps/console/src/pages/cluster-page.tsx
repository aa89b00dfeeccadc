import { useEffect } from 'preact/hooks';
import { api } from '../api.js';
import { ErrorText, Section, Time } from '../components/bits.js';
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
              <p class="muted small">The tasks are split into {c.shards.length} shards, each led by one scheduler; the leader of each took its latest epoch.</p>
              <table class="table responsive" aria-label="Shard map">
                <thead>
                  <tr>
                    <th scope="col">Shard</th>
                    <th scope="col">Leader</th>
                    <th scope="col">Epoch</th>
                    <th scope="col">Last heartbeat</th>
                  </tr>
                </thead>
                <tbody>
                  {c.shards.map((s) => (
                    <tr key={s.shard}>
                      <td data-label="Shard">{s.shard}</td>
                      <td data-label="Leader">{s.leader ?? <span class="status status-dead">none</span>}</td>
                      <td data-label="Epoch">{s.epoch}</td>
                      <td data-label="Last heartbeat">
                        <Time at={s.heartbeatAt} zone={zone} withRelative />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </Section>
          ) : null}
          <Section title="Flow control">
            <p class="muted small">The busiest keys tasks share (<code>policy.concurrency</code>, <code>policy.rateLimit</code>): runs in progress and runs held back until the key has room.</p>
            {c.flow.length === 0 ? (
              <p class="empty">No run holds or waits on a flow-control key.</p>
            ) : (
              <table class="table responsive" aria-label="Flow-control keys">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Running</th>
                    <th scope="col">Waiting</th>
                  </tr>
                </thead>
                <tbody>
                  {c.flow.map((k) => (
                    <tr key={k.key}>
                      <td data-label="Key">
                        <code>{k.key}</code>
                      </td>
                      <td data-label="Running">{k.running}</td>
                      <td data-label="Waiting">{k.waiting}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
          <Section title="Workers">
            {c.workers.length === 0 ? (
              <p class="empty">No live worker: nothing will run until one starts.</p>
            ) : (
              <table class="table responsive">
                <thead>
                  <tr>
                    <th scope="col">Instance</th>
                    <th scope="col">Handlers</th>
                    <th scope="col">Concurrency</th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  {c.workers.map((w) => (
                    <tr key={w.instance}>
                      <td data-label="Instance">{w.instance}</td>
                      <td data-label="Handlers">{w.handlers.map((h) => <code key={h} class="chip">{h}</code>)}</td>
                      <td data-label="Concurrency">{w.concurrency ?? '—'}</td>
                      <td data-label="Last seen">{w.seenAt ? relative(w.seenAt) : '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
          <Section title="Clock offsets">
            <p class="muted small">Each process's clock minus Postgres' clock, which every process corrects by.</p>
            {c.clockOffsets.length === 0 ? (
              <p class="empty">No process has published its offset.</p>
            ) : (
              <table class="table responsive">
                <thead>
                  <tr>
                    <th scope="col">Role</th>
                    <th scope="col">Instance</th>
                    <th scope="col">Offset</th>
                    <th scope="col">Measured</th>
                  </tr>
                </thead>
                <tbody>
                  {c.clockOffsets.map((o) => (
                    <tr key={`${o.role}:${o.instance}`}>
                      <td data-label="Role">{o.role}</td>
                      <td data-label="Instance">{o.instance}</td>
                      <td data-label="Offset">
                        {o.offsetMs >= 0 ? '+' : ''}
                        {formatSpan(o.offsetMs)}
                        {Math.abs(o.offsetMs) > OFFSET_LIMIT_MS ? <span class="status status-dead"> beyond 1 s</span> : null}
                      </td>
                      <td data-label="Measured">
                        <Time at={o.measuredAt} zone={zone} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </Section>
        </>
      ) : null}
    </main>
  );
}
