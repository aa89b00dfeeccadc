import { routes, type TaskChanges, type TaskVersion, type WrittenTask } from '@punctual/contract';
import { useState } from 'preact/hooks';
import { api, errorText } from '../api.js';
import { formatInZone } from '../format/time.js';
import { useLoad } from '../load.js';
import { useMayCall } from '../session.js';
import { Dialog } from './dialog.js';
import type { Say } from './task-actions.js';

/** A field's value on one line. */
const shown = (value: unknown) => (value === undefined ? '(none)' : JSON.stringify(value));

/** What a rollback would do, as its preview says it: fire times, planned runs, warnings. */
function ChangesSummary({ changes }: { changes: TaskChanges }) {
  const local = (f: { local: string }) => f.local.replace('T', ' ').replace('.000', '');
  return (
    <ul class="changes">
      {changes.moved.length ? (
        <li>
          {changes.moved.length} fire time(s) move, e.g. {local(changes.moved[0]!.from)} → {local(changes.moved[0]!.to)}
        </li>
      ) : null}
      {changes.removed.length ? (
        <li>
          {changes.removed.length} fire time(s) dropped, e.g. {local(changes.removed[0]!)}
        </li>
      ) : null}
      {changes.added.length ? (
        <li>
          {changes.added.length} fire time(s) added, e.g. {local(changes.added[0]!)}
        </li>
      ) : null}
      {!changes.moved.length && !changes.removed.length && !changes.added.length ? (
        <li>the next {changes.fireTimes.after.length} fire times stay as they are</li>
      ) : null}
      <li>
        planned runs: {changes.pending.kept.length} kept, {changes.pending.withdrawn.length} withdrawn,{' '}
        {changes.pending.retimed.length} re-timed
      </li>
      {changes.warnings.map((w) => (
        <li key={w} class="error-text">
          {w}
        </li>
      ))}
      <li class="muted">
        next fire times after: {changes.fireTimes.after.slice(0, 3).map(local).join(', ') || 'none'}
      </li>
    </ul>
  );
}

/**
 * A task's versions, newest first: who changed what, when and why, each with the fields it changed;
 * for a key that may, "Roll back to this" — the preview first, then the rollback.
 */
export function TaskVersions({
  name,
  zone,
  say,
  onChanged,
}: {
  name: string;
  zone: string;
  say: Say;
  onChanged: () => void;
}) {
  const mayCall = useMayCall();
  const versions = useLoad(async () => {
    const page = await api.tasks.versions(name, { limit: 20 }).page();
    const diffs = await Promise.all(page.items.map((v) => api.tasks.version(name, v.version).then((d) => d.diff)));
    return page.items.map((v, i) => ({ ...v, diff: diffs[i]! }));
  }, [name]);
  const [preview, setPreview] = useState<{ version: TaskVersion; result: WrittenTask } | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = async (version: TaskVersion) => {
    setBusy(true);
    try {
      setPreview({ version, result: await api.tasks.rollback(name, { version: version.version, dryRun: true }) });
    } catch (error) {
      say('error', `Preview failed: ${errorText(error)}`);
    } finally {
      setBusy(false);
    }
  };
  const confirm = async () => {
    if (!preview) return;
    setBusy(true);
    try {
      const done = await api.tasks.rollback(name, { version: preview.version.version });
      say('ok', `Rolled ${name} back to version ${preview.version.version}: it is now version ${done.version}.`);
      setPreview(null);
      onChanged();
      await versions.reload();
    } catch (error) {
      say('error', `Rollback failed: ${errorText(error)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      {versions.error ? <p class="notice notice-error">{versions.error}</p> : null}
      <ol class="versions" aria-label="Versions">
        {(versions.data ?? []).map((v) => (
          <li key={v.version} class="version">
            <p>
              <strong>version {v.version}</strong>
              {v.current ? <span class="muted"> (now)</span> : null} · {v.action.replace(/^task\./, '')} ·{' '}
              {formatInZone(v.changedAt, zone)} by {v.changedBy}
              {v.reason ? <span> — “{v.reason}”</span> : null}
            </p>
            {v.diff.length ? (
              <ul class="diff small">
                {v.diff.map((d) => (
                  <li key={d.field}>
                    <code>{d.field}</code>: {d.secret ? 'secret, changed' : `${shown(d.before)} → ${shown(d.after)}`}
                  </li>
                ))}
              </ul>
            ) : null}
            {!v.current && mayCall(routes.rollbackTask) ? (
              <button type="button" disabled={busy} onClick={() => void ask(v)}>
                Roll back to version {v.version}
              </button>
            ) : null}
          </li>
        ))}
      </ol>
      {preview ? (
        <Dialog title={`Roll back to version ${preview.version.version}?`} onClose={() => setPreview(null)}>
          <p>A new version equal to version {preview.version.version} would be made. What it would do:</p>
          {preview.result.changes ? <ChangesSummary changes={preview.result.changes} /> : null}
          <div class="row-actions">
            <button type="button" class="primary" disabled={busy} onClick={() => void confirm()}>
              Roll back
            </button>
            <button type="button" onClick={() => setPreview(null)}>
              Keep it as it is
            </button>
          </div>
        </Dialog>
      ) : null}
    </>
  );
}
