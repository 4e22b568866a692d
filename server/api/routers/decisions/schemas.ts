/** The decision as the API shows it (GET /decisions/{id}, the rulings' answers, lists). */
import { z } from 'zod';
import { decisionShapes, decisionStatuses, decisionUrgencies } from '@/db/schema';
import { id, jsonNumber, jsonObject, text, timestamp } from '../../schemas';
import { artifactSchema } from '../artifacts/shared';
import { policySchema, policySourceSchema, rulingSchema } from './policy-schemas';

/** The most an action's arguments may take, as canonical JSON. */
const MAX_ARGUMENTS_BYTES = 64 * 1024;

/** An action's arguments: any JSON object of at most 64 KiB, as the strict-JSON rules read it. */
export const actionArguments = () =>
  jsonObject({ maxBytes: MAX_ARGUMENTS_BYTES }).meta({
    description: 'The tool’s arguments: a JSON object of at most 65,536 bytes as canonical JSON (RFC 8785).',
  });

/** The action under decision, as an agent sends it. */
export const actionInput = z
  .strictObject({
    tool: text(1, 200).meta({ description: 'The tool (or operation) the agent would call.' }),
    arguments: actionArguments(),
    target: z
      .strictObject({
        type: z.enum(['task']),
        id: id(),
        version: jsonNumber({ min: 1, int: true }).meta({
          description: 'The task’s aggregateVersion as the agent read it (its ETag); it must still be current.',
        }),
      })
      .optional()
      .meta({ description: 'The task the action acts on. If it changes before the grant is used, the approval is void.' }),
  })
  .meta({ id: 'DecisionActionInput' });

const actionSchema = z
  .object({
    tool: z.string(),
    arguments: jsonObject(),
    target: z.object({ type: z.literal('task'), id: z.uuid(), version: z.int() }).optional(),
    artifacts: z
      .array(z.object({ id: z.uuid(), sha256: z.string().regex(/^sha256:[0-9a-f]{64}$/) }))
      .optional()
      .meta({
        description:
          'The artifacts the decision names (artifact_ids), by digest, added by the service before the action is digested: approving it approves those exact bytes, and a tool server presents the action with them.',
      }),
  })
  .meta({ id: 'DecisionAction' });

const digest = () => z.string().regex(/^sha256:[0-9a-f]{64}$/);

const grantSchema = z
  .object({
    id: z.uuid(),
    token: z
      .string()
      .nullable()
      .meta({
        description:
          'Shown only to the party the grant is for: the API key that raised the decision (its MCP wait too), or the ' +
          'person who raised it; null to every other reader (other keys, approvers, viewers), who see the grant’s id, ' +
          'digest, expiry and state. A compact JWS (EdDSA, Ed25519) over the grant’s claims: iss, sub (the decision), ' +
          'azp (whom it is for: the raising key’s id, or `user:<id>` for a person), jti (this id), wid (the workspace), ' +
          'act (the approved action_digest), tgt (the target and its version), apr (the approver), iat, exp. Verify it ' +
          'with the workspace’s JWKS (GET /workspaces/{workspace_id}/jwks.json), pinning iss, wid and azp, then consume ' +
          'it with that key (POST /grants/consume).',
      }),
    action_digest: digest(),
    expires_at: timestamp(),
    consumed_at: timestamp().nullable(),
    voided_at: timestamp().nullable().meta({ description: 'When a presentation found its target changed: the grant is void.' }),
  })
  .meta({ id: 'Grant' });

export const optionSchema = z
  .strictObject({
    id: text(1, 120),
    label: text(1, 200),
    description: text(0, 1000).optional(),
  })
  .meta({ id: 'DecisionOption' });

const resolutionSchema = z
  .object({
    outcome: z.enum(['approved', 'declined', 'cancelled', 'expired']),
    option_ids: z.array(z.string()),
    note: z.string().nullable(),
    resolved_by: z.string().meta({ description: 'The user id of the human who ruled, or `system`.' }),
    resolved_by_type: z.enum(['human', 'system']),
    resolved_by_name: z.string().nullable(),
    resolved_at: timestamp(),
    acting_for: z.uuid().optional().meta({ description: 'The member the ruling was given for by their delegate, while they were away.' }),
  })
  .meta({ id: 'DecisionResolution' });

const attentionSchema = z
  .object({
    attention_id: z.uuid(),
    requested_at: timestamp(),
    last_requested_at: timestamp(),
    request_count: z.int().min(1),
    recommended_option_id: z.string().nullable(),
    recommendation_note: z.string().nullable(),
    impact_if_delayed: z.string().nullable(),
    continuation: z.object({ strategy: z.string() }).nullable(),
  })
  .meta({ id: 'AttentionRecord' });

const historySchema = z.object({
  event_id: z.uuid(),
  event_type: z.string(),
  sequence: z.int(),
  actor_type: z.string(),
  actor_id: z.string(),
  actor_name: z
    .string()
    .nullable()
    .meta({ description: 'Who acted, in words: the human’s display name or the API key’s name (as they are now); null for the system.' }),
  occurred_at: timestamp(),
  event_hash: z.string(),
});

export const decisionSchema = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    title: z.string(),
    description: z.string().nullable(),
    status: z.enum(decisionStatuses),
    shape: z.enum(decisionShapes),
    urgency: z.enum(decisionUrgencies),
    blocks_task: z.boolean(),
    task_id: z.uuid().nullable(),
    run_id: z.uuid().nullable(),
    initiative_id: z.uuid().nullable(),
    workstream_id: z.uuid().nullable(),
    shape_context: z.object({ options: z.array(optionSchema) }),
    due_at: timestamp().nullable(),
    on_timeout: z.enum(['expire', 'decline']),
    resolution: resolutionSchema.nullable(),
    action: actionSchema.nullable().meta({ description: 'The exact action under decision, as raised; null for none.' }),
    action_digest: digest().nullable().meta({ description: '`sha256:` + hex(SHA-256(JCS(action))) (RFC 8785): the action as raised.' }),
    editable: z.boolean().meta({ description: 'Whether the approver may change the action’s arguments before approving.' }),
    require_passkey: z.boolean().meta({ description: 'Whether approving takes the approver’s passkey.' }),
    grant_ttl_seconds: z.int().nullable().meta({ description: 'How long the grant issued on approval lasts; null without an action.' }),
    approved_action: actionSchema.nullable().meta({ description: 'The action as approved (with the approver’s arguments when edited).' }),
    approved_action_digest: digest().nullable(),
    grant: grantSchema.nullable().meta({ description: 'The single-use grant issued when the action was approved.' }),
    gateway: z
      .object({
        server_id: z.uuid(),
        server: z.string().meta({ description: 'The MCP server’s name.' }),
        tool: z.string().meta({ description: 'The upstream tool’s own name.' }),
      })
      .nullable()
      .meta({
        description:
          'Raised by the MCP gateway for an agent’s call of an upstream tool (the action’s tool is `<server>.<tool>`): the ' +
          'service runs the call itself once approved, with the arguments as approved, once (GET /tool-calls?decision_id= ' +
          'tells whether and when it ran). Null for a decision an agent raised itself.',
      }),
    artifacts: z
      .array(artifactSchema)
      .meta({ description: 'The artifacts the approver is shown (artifact_ids when raised): what the decision is about, by digest.' }),
    policy: policySchema.meta({ description: 'Who must approve, frozen when the decision was raised.' }),
    policy_digest: digest().meta({ description: '`sha256:` + hex(SHA-256(JCS(policy))), as its decision.created event records it.' }),
    policy_source: policySourceSchema,
    escalated_steps: z.int().min(0).meta({
      description: 'How many of the policy’s escalation steps have been reached (decision.escalated): their people may rule too.',
    }),
    next_escalation_at: timestamp().nullable().meta({ description: 'When the next escalation step comes due, if any is left.' }),
    approvals: z.array(rulingSchema).meta({
      description: 'The approvals so far, in order. The decision stays pending until the last stage’s quorum is met.',
    }),
    declines: z.array(rulingSchema).meta({ description: 'Declines recorded under a policy without veto that did not end it.' }),
    attention: attentionSchema.nullable(),
    history: z.array(historySchema).meta({ description: 'The decision’s ledger events, oldest first.' }),
    created_by: z.object({ type: z.string(), id: z.string() }),
    created_at: timestamp(),
    updated_at: timestamp(),
  })
  .meta({ id: 'Decision' });

export const decisionBody = z.object({ decision: decisionSchema }).meta({ id: 'DecisionResponse' });
