import { SLOT_OUTCOME_WORDS, type SlotOutcome, type TimelineItem } from '@punctual/contract';
import { useState } from 'preact/hooks';
import { api, errorText } from '../api.js';
import { formatInZone } from '../format/time.js';
import { useLoad } from '../load.js';
import { Events } from './run-history.js';

const HOUR = 3_600_000;
const SPANS = { day: 24 * HOUR, week: 7 * 24 * HOUR } as const;
/** The most cells the strip draws: past that, only the latest slots of the span. */
const CELLS_MAX = 1_000;

/** What each outcome is called in the strip's legend and on hover: as `punctual explain` says it, but a success is "succeeded". */
export const OUTCOME_WORDS: Record<SlotOutcome, string> = { ...SLOT_OUTCOME_WORDS, succeeded: 'succeeded' };

/**
 * The slots of the last day (or week) up to a little ahead — the timeline of a span at most
 * {@link CELLS_MAX} slots long; a denser one is shown from the latest slots back.
 */
async function slotsOf(
  name: string,
  span: number,
  now: number,
): Promise<{ items: TimelineItem[]; from: number; cut: boolean }> {
  const to = now + span / 12;
  let from = now - span;
  let page = await api.tasks
    .timeline(name, { from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: CELLS_MAX })
    .page();
  if (!page.nextCursor || page.items.length < 2) return { items: page.items, from, cut: false };
  // More slots than cells: as many as fit, ending at `to`, at the density the first page had.
  const first = Date.parse(page.items[0]!.scheduledFor);
  const last = Date.parse(page.items.at(-1)!.scheduledFor);
  from = Math.max(from, to - ((last - first) / (page.items.length - 1)) * (CELLS_MAX - 1));
  page = await api.tasks
    .timeline(name, { from: new Date(from).toISOString(), to: new Date(to).toISOString(), limit: CELLS_MAX })
    .page();
  return { items: page.items, from, cut: true };
}

/**
 * A task's slots at a glance: one cell per slot of the day or the week, coloured by its outcome,
 * its reason on hover; a click explains it (and opens its run's events when it has one).
 */
export function TimelineStrip({ name, zone }: { name: string; zone: string }) {
  const [span, setSpan] = useState<keyof typeof SPANS>('day');
  const [chosen, setChosen] = useState<TimelineItem | null>(null);
  const slots = useLoad(() => slotsOf(name, SPANS[span], Date.now()), [name, span], 30_000);
  const items = slots.data?.items ?? [];
  const counts = new Map<SlotOutcome, number>();
  for (const item of items) counts.set(item.outcome, (counts.get(item.outcome) ?? 0) + 1);
  return (
    <div class="timeline">
      <div class="timeline-head">
        <span role="group" aria-label="Timeline span">
          {(['day', 'week'] as const).map((s) => (
            <button key={s} type="button" aria-pressed={span === s} onClick={() => setSpan(s)}>
              {s === 'day' ? 'Day' : 'Week'}
            </button>
          ))}
        </span>
        <span class="muted small">
          {[...counts].map(([outcome, n]) => `${n} ${OUTCOME_WORDS[outcome]}`).join(' · ') ||
            (slots.loading ? 'Loading…' : 'no slots in this span')}
          {slots.data?.cut ? ` (the latest ${items.length} slots)` : ''}
        </span>
      </div>
      {slots.error ? <p class="notice notice-error">{slots.error}</p> : null}
      <ol class="timeline-strip" aria-label={`Slots of the last ${span}`}>
        {items.map((item) => (
          <li key={item.scheduledFor}>
            <button
              type="button"
              class={`slot-cell outcome-${item.outcome}${chosen?.scheduledFor === item.scheduledFor ? ' chosen' : ''}`}
              title={`${formatInZone(item.scheduledFor, zone)} — ${OUTCOME_WORDS[item.outcome]}${item.reason ? ` (${item.reason.replace(/_/g, ' ')})` : ''}: ${item.detail}`}
              aria-label={`${formatInZone(item.scheduledFor, zone)} ${OUTCOME_WORDS[item.outcome]}`}
              onClick={() => setChosen(item)}
            />
          </li>
        ))}
      </ol>
      {chosen ? <SlotExplanation item={chosen} zone={zone} /> : null}
    </div>
  );
}

/** One slot explained: when, what became of it, why, and its run's events. */
function SlotExplanation({ item, zone }: { item: TimelineItem; zone: string }) {
  return (
    <div class="slot-explanation" role="region" aria-label="Slot explanation">
      <p>
        <strong>{formatInZone(item.scheduledFor, zone)}</strong>{' '}
        <span class={`status outcome-${item.outcome}`}>{OUTCOME_WORDS[item.outcome]}</span>
        {item.reason ? <code class="small"> {item.reason}</code> : null}
      </p>
      <p>{item.detail}</p>
      {item.executionId ? (
        <p class="muted small">
          run {item.executionId}
          {item.attempts ? `, ${item.attempts} attempt${item.attempts === 1 ? '' : 's'}` : ''}
        </p>
      ) : null}
      {item.executionId ? <Events id={item.executionId} zone={zone} /> : null}
    </div>
  );
}

/** "why?" beside a run that did not succeed: its slot's explanation from the timeline, fetched when asked. */
export function WhyButton({ task, scheduledFor }: { task: string; scheduledFor: string }) {
  const [answer, setAnswer] = useState<string | null>(null);
  const ask = async () => {
    try {
      const page = await api.tasks.timeline(task, { from: scheduledFor, to: scheduledFor, limit: 1 }).page();
      setAnswer(
        page.items[0]
          ? `${OUTCOME_WORDS[page.items[0].outcome]}${page.items[0].reason ? ` (${page.items[0].reason.replace(/_/g, ' ')})` : ''}: ${page.items[0].detail}`
          : 'no explanation found for this slot',
      );
    } catch (error) {
      setAnswer(errorText(error));
    }
  };
  return answer ? (
    <p class="why small" role="note">
      {answer}
    </p>
  ) : (
    <button type="button" class="link-button small" onClick={() => void ask()}>
      why?
    </button>
  );
}
