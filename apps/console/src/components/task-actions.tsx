import { CATCH_UPS, type CatchUp, routes, type TaskDetail } from '@punctual/contract';
import { useState } from 'preact/hooks';
import { api, errorText } from '../api.js';
import { browserZone } from '../format/time.js';
import { useMayCall } from '../session.js';
import { Dialog } from './dialog.js';

export type Say = (kind: 'ok' | 'error', text: string) => void;

const CATCH_UP_WORDS: Record<CatchUp, string> = {
  skip: 'skip the slots of the pause',
  latest: 'run the latest slot of the pause once',
  all: 'run every slot of the pause',
};

/** `2026-06-01T09:00` (what a datetime-local input holds) for an instant, in the browser's zone. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

function BackfillDialog({
  name,
  onDone,
  onClose,
}: {
  name: string;
  onDone: (planned: number) => void;
  onClose: () => void;
}) {
  const now = Date.now();
  const [from, setFrom] = useState(localInput(now - 24 * 3_600_000));
  const [to, setTo] = useState(localInput(now));
  const [maxRuns, setMaxRuns] = useState('100');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const { planned } = await api.tasks.backfill(name, {
        from: new Date(from).toISOString(),
        to: new Date(to).toISOString(),
        maxRuns: Number(maxRuns),
      });
      onDone(planned);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog title={`Backfill ${name}`} onClose={onClose}>
      <form class="form-grid" onSubmit={submit}>
        <p class="muted small">
          Runs the task's slots in this window now, each once (slots already planned are not planned again). Times are
          in your zone, {browserZone()}.
        </p>
        <label>
          From
          <input type="datetime-local" step="1" required value={from} onInput={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          To
          <input type="datetime-local" step="1" required value={to} onInput={(e) => setTo(e.currentTarget.value)} />
        </label>
        <label>
          At most this many runs
          <input
            type="number"
            min="1"
            max="1000"
            required
            value={maxRuns}
            onInput={(e) => setMaxRuns(e.currentTarget.value)}
          />
        </label>
        {error ? (
          <p class="notice notice-error" role="alert">
            {error}
          </p>
        ) : null}
        <div class="dialog-buttons">
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="submit" class="primary" disabled={busy}>
            Backfill
          </button>
        </div>
      </form>
    </Dialog>
  );
}

function DeleteDialog({
  name,
  onDeleted,
  onClose,
  say,
}: {
  name: string;
  onDeleted: () => void;
  onClose: () => void;
  say: Say;
}) {
  const [busy, setBusy] = useState(false);
  const remove = async () => {
    setBusy(true);
    try {
      await api.tasks.delete(name);
      onDeleted();
    } catch (e) {
      say('error', `Delete failed: ${errorText(e)}`);
      onClose();
    }
  };
  return (
    <Dialog title={`Delete ${name}?`} onClose={onClose}>
      <p>The task stops for good: its pending runs are cancelled. Its history is kept.</p>
      <div class="dialog-buttons">
        <button type="button" onClick={onClose} autoFocus>
          Keep the task
        </button>
        <button type="button" class="danger" disabled={busy} onClick={remove}>
          Delete
        </button>
      </div>
    </Dialog>
  );
}

/**
 * Pause, Resume (with the catch-up choice), Trigger, Backfill and Delete — each shown only to a
 * role the API lets call it, and only when it applies to the task's status.
 */
export function TaskActions({
  task,
  onChanged,
  onDeleted,
  say,
}: {
  task: TaskDetail;
  onChanged: () => void;
  onDeleted: () => void;
  say: Say;
}) {
  const mayCall = useMayCall();
  const [catchUp, setCatchUp] = useState<'' | CatchUp>('');
  const [open, setOpen] = useState<'backfill' | 'delete' | null>(null);
  const [busy, setBusy] = useState(false);
  const act = (what: string, call: () => Promise<string>) => async () => {
    setBusy(true);
    try {
      say('ok', await call());
      onChanged();
    } catch (e) {
      say('error', `${what} failed: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const name = task.name;
  const pause = act(
    'Pause',
    async () => (await api.tasks.pause(name), `Paused ${name}: no new slots until it is resumed.`),
  );
  const resume = act(
    'Resume',
    async () => (
      await api.tasks.resume(name, catchUp ? { catchUp } : {}),
      `Resumed ${name}${catchUp ? ` (${CATCH_UP_WORDS[catchUp]})` : ''}.`
    ),
  );
  const trigger = act(
    'Trigger',
    async () => `Triggered ${name}: run ${(await api.tasks.trigger(name)).id} is planned now.`,
  );
  const actions = [
    task.status === 'active' && mayCall(routes.pauseTask) ? (
      <button type="button" key="pause" disabled={busy} onClick={pause}>
        Pause
      </button>
    ) : null,
    task.status === 'paused' && mayCall(routes.resumeTask) ? (
      <span class="resume" key="resume">
        <span class="field">
          <label for="resume-catch-up">Catch-up</label>
          <select
            id="resume-catch-up"
            value={catchUp}
            onChange={(e) => setCatchUp(e.currentTarget.value as '' | CatchUp)}
          >
            <option value="">as the misfire policy says ({task.policy.misfire})</option>
            {CATCH_UPS.map((c) => (
              <option key={c} value={c}>
                {c}: {CATCH_UP_WORDS[c]}
              </option>
            ))}
          </select>
        </span>
        <button type="button" class="primary" disabled={busy} onClick={resume}>
          Resume
        </button>
      </span>
    ) : null,
    mayCall(routes.triggerTask) ? (
      <button type="button" key="trigger" disabled={busy} onClick={trigger}>
        Trigger
      </button>
    ) : null,
    mayCall(routes.backfillTask) ? (
      <button type="button" key="backfill" disabled={busy} onClick={() => setOpen('backfill')}>
        Backfill
      </button>
    ) : null,
    mayCall(routes.deleteTask) ? (
      <button type="button" key="delete" class="danger" disabled={busy} onClick={() => setOpen('delete')}>
        Delete
      </button>
    ) : null,
  ].filter(Boolean);
  if (actions.length === 0) return null;
  return (
    <div class="actions" role="group" aria-label="Task actions">
      {actions}
      {open === 'backfill' ? (
        <BackfillDialog
          name={name}
          onClose={() => setOpen(null)}
          onDone={(planned) => {
            setOpen(null);
            say('ok', `Backfill of ${name}: ${planned} run${planned === 1 ? '' : 's'} planned.`);
            onChanged();
          }}
        />
      ) : null}
      {open === 'delete' ? (
        <DeleteDialog name={name} say={say} onClose={() => setOpen(null)} onDeleted={onDeleted} />
      ) : null}
    </div>
  );
}
