/** POST /decisions: Raise a decision for a human ruling. */
import { z } from 'zod';
import { decisionShapes, decisionUrgencies } from '@/db/schema';
import { createDecision } from '@/server/domain/decisions/create-decision';
import { approverProcedure } from '../../procedures';
import { id, jsonBoolean, jsonNumber, mutationHeaders, text } from '../../schemas';
import { actionInput, decisionBody, optionSchema } from './schemas';
import { policyInput } from './policy-schemas';

const createInput = z.strictObject({
  workspace_id: id().meta({ description: 'Your workspace (another workspace’s id is 403).' }),
  title: text(1, 500),
  description: text(0, 8000).optional(),
  shape: z.enum(decisionShapes).default('option_select'),
  urgency: z.enum(decisionUrgencies).default('urgent'),
  blocks_task: jsonBoolean().default(false).meta({ description: 'True when the named task cannot go on without the ruling.' }),
  task_id: id().optional().meta({ description: 'The task the decision is about; initiative and workstream are derived from it.' }),
  run_id: id().optional().meta({ description: 'The run waiting for the ruling (a run of task_id when both are sent).' }),
  due_at: z.iso
    .datetime({ offset: true })
    .optional()
    .meta({ description: 'When to stop waiting (future). Past it, the decision is expired, or declined (on_timeout).' }),
  on_timeout: z.enum(['expire', 'decline']).default('expire'),
  shape_context: z
    .strictObject({
      options: z
        .array(optionSchema)
        .min(2)
        .max(20)
        .check((ctx) => {
          const ids = ctx.value.map((o) => o.id);
          const dup = ids.find((v, i) => ids.indexOf(v) !== i);
          if (dup !== undefined) ctx.issues.push({ code: 'custom', input: ctx.value, message: `option id ${dup} is repeated` });
        })
        .optional(),
    })
    .optional()
    .meta({
      description: '2 to 20 options with unique ids. option_select and option_multiselect without options get approve / decline.',
    }),
  action: actionInput.optional().meta({
    description:
      'The exact action under decision. Its digest is `action_digest`; approving it issues a single-use grant for it. ' +
      'With a `target`, the task must be at that version now (409 approval_stale otherwise), and without task_id or ' +
      'run_id the decision is about that task.',
  }),
  editable: jsonBoolean()
    .optional()
    .meta({ description: 'With an action: the approver may change its arguments before approving (default false).' }),
  require_passkey: jsonBoolean()
    .optional()
    .meta({
      description:
        'Approving takes the approver’s passkey: a WebAuthn assertion over the ruling’s statement, kept in the ledger ' +
        '(default false; the workspace may ask it of every decision of an urgency).',
    }),
  grant_ttl_seconds: jsonNumber({ min: 1, max: 86_400, int: true })
    .optional()
    .meta({ description: 'With an action: how long the grant issued on approval lasts, in seconds (default 900, at most 86400).' }),
  artifact_ids: z
    .array(id())
    .max(20)
    .optional()
    .meta({
      description:
        'Artifacts of your workspace (POST /artifacts) the approver is shown on the decision page: text and Markdown as ' +
        'text, images inline, anything else as a download with its digest. With an `action`, their digests join it as ' +
        '`action.artifacts` before it is digested, so approving it approves those exact bytes. 404 for one that is not ' +
        'your workspace’s.',
    }),
  policy: policyInput.optional().meta({
    description:
      'Who must approve. Without one, the first of the workspace’s rules (GET /decision-policy) that matches ' +
      'the decision applies, else one approval from any owner or approver, and a decline declines. The decision records ' +
      'the policy, its digest and where it came from.',
  }),
});

export const createProcedure = approverProcedure
  .meta({
    openapi: {
      method: 'POST',
      path: '/decisions',
      tags: ['decisions'],
      summary: 'Raise a decision for a human ruling',
      description:
        'Only `workspace_id` and `title` are required; the decision is then `option_select`, `urgent`, ' +
        '`blocks_task: false`, `pending`, with the options approve / decline. With an `Idempotency-Key`, the same key ' +
        'and body return the original decision (200); a different body is 422 idempotency_conflict.',
      requestHeaders: mutationHeaders,
    },
    auth: ['ApiKey', 'Session'],
    successStatus: 201,
    otherSuccess: { 200: 'Idempotent replay: the original decision.' },
    errorCodes: [
      'forbidden',
      'not_found',
      'approval_stale',
      'lease_expired',
      'invalid_idempotency_key',
      'idempotency_conflict',
      'idempotency_in_progress',
    ],
  })
  .input(createInput)
  .output(decisionBody)
  .mutation(({ input, actor, write }) => {
    const { workspace_id: _workspace, ...rest } = input;
    return write(async (tx) => ({ decision: await createDecision(tx, actor, rest) }), { replay: (body) => body });
  });
