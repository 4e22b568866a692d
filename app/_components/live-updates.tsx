'use client';
/**
 * Keeps the signed-in pages current as the ledger moves: an event stream of the workspace's
 * decision events (GET /api/v1/events/stream?format=sse, authenticated by the session cookie, with
 * the API's leases and commit wake-ups) refreshes the page's server-rendered data when one
 * arrives, so a new pending decision shows in the inbox, and a ruling made elsewhere on the
 * decision page, without a reload. Refreshes are spaced at least REFRESH_GAP_MS apart, so a burst
 * of events costs two, not one each. The refreshed layout brings the tab title's count of pending
 * decisions (app/layout.tsx).
 *
 * Each lease ends with `lease_end` and the cursor to go on from; the next lease starts there, so
 * nothing between the two is missed. A dropped connection is reopened by EventSource itself,
 * from the last event id it received.
 */
import { useRouter } from 'next/navigation';
import { useEffect, useRef } from 'react';

const DECISION_EVENT_TYPES = [
  'decision.created',
  'decision.attention_requested',
  // Under a policy: whose turn it is moves with each ruling recorded and each escalation.
  'decision.approval_recorded',
  'decision.decline_recorded',
  'decision.escalated',
  'decision.approved',
  'decision.declined',
  'decision.cancelled',
  'decision.expired',
] as const;

const REFRESH_GAP_MS = 400;

export function LiveUpdates({ workspaceId, cursor }: { workspaceId: string; cursor: string }) {
  const router = useRouter();
  // Where the first lease starts: the position the page was first drawn at (later renders bring
  // later cursors, but the open stream already covers them).
  const start = useRef(cursor);

  useEffect(() => {
    let source: EventSource | null = null;
    let lastRefresh = 0;
    let pendingRefresh: number | null = null;
    const refresh = () => {
      const wait = lastRefresh + REFRESH_GAP_MS - Date.now();
      if (wait <= 0) {
        lastRefresh = Date.now();
        router.refresh();
      } else if (pendingRefresh === null) {
        pendingRefresh = window.setTimeout(() => {
          pendingRefresh = null;
          lastRefresh = Date.now();
          router.refresh();
        }, wait);
      }
    };
    const open = (from: string) => {
      const query = new URLSearchParams({ format: 'sse', workspace_id: workspaceId, cursor: from, lease_ms: '120000' });
      for (const type of DECISION_EVENT_TYPES) query.append('type', type);
      source = new EventSource(`/api/v1/events/stream?${query}`);
      for (const type of DECISION_EVENT_TYPES) source.addEventListener(type, refresh);
      source.addEventListener('lease_end', (e) => {
        source?.close();
        open((JSON.parse((e as MessageEvent<string>).data) as { nextCursor: string }).nextCursor);
      });
    };
    open(start.current);
    // A tab that slept may have missed a lease's end: catch up when it is looked at again.
    const visible = () => {
      if (document.visibilityState === 'visible') refresh();
    };
    document.addEventListener('visibilitychange', visible);
    return () => {
      source?.close();
      if (pendingRefresh !== null) window.clearTimeout(pendingRefresh);
      document.removeEventListener('visibilitychange', visible);
    };
  }, [router, workspaceId]);

  return null;
}
