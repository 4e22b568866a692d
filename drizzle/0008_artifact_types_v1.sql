-- The artifact type catalog, release 1. Later releases are new migrations that insert, update
-- (bumping catalog_version) or retire rows, so every installation serves the same catalog.
INSERT INTO artifact_types (type_code, label, summary, domain, stage, workflow, default_persona, tags, is_deliverable, catalog_version, sort_order) VALUES
  ('market_research_brief', 'Market research brief', 'Size, segments and trends of a market, with sources.', 'research', 'discover', 'market-research', 'analyst', ARRAY['research', 'market', 'sources']::text[], true, 1, 1),
  ('customer_interview_notes', 'Customer interview notes', 'What customers said, verbatim quotes and patterns, per interview.', 'research', 'discover', 'customer-discovery', 'researcher', ARRAY['research', 'customers', 'qualitative']::text[], true, 1, 2),
  ('competitive_analysis', 'Competitive analysis', 'Competitors, their offers and prices, and where we differ.', 'research', 'discover', 'market-research', 'analyst', ARRAY['research', 'competition']::text[], true, 1, 3),
  ('product_requirements', 'Product requirements', 'The problem, the users, the scope and the acceptance criteria.', 'product', 'plan', 'product-definition', 'product_manager', ARRAY['product', 'requirements']::text[], true, 1, 4),
  ('technical_design', 'Technical design', 'Architecture, interfaces, data and the trade-offs chosen.', 'engineering', 'plan', 'build', 'architect', ARRAY['engineering', 'design']::text[], true, 1, 5),
  ('code_change', 'Code change', 'A reviewed change to a codebase, with its tests.', 'engineering', 'build', 'build', 'engineer', ARRAY['engineering', 'code']::text[], true, 1, 6),
  ('test_report', 'Test report', 'What was tested, how, and what passed or failed.', 'engineering', 'review', 'quality', 'qa_engineer', ARRAY['engineering', 'quality', 'evidence']::text[], true, 1, 7),
  ('release_notes', 'Release notes', 'What changed for users in a release.', 'engineering', 'launch', 'release', 'technical_writer', ARRAY['engineering', 'release', 'docs']::text[], true, 1, 8),
  ('launch_plan', 'Launch plan', 'Audience, message, channels, dates and owners of a launch.', 'marketing', 'plan', 'go-to-market', 'marketer', ARRAY['marketing', 'launch']::text[], true, 1, 9),
  ('blog_post', 'Blog post', 'A published article, with its draft history.', 'marketing', 'launch', 'content', 'writer', ARRAY['marketing', 'content']::text[], true, 1, 10),
  ('sales_one_pager', 'Sales one-pager', 'One page a seller leaves with a prospect.', 'sales', 'launch', 'enablement', 'sales_engineer', ARRAY['sales', 'enablement']::text[], true, 1, 11),
  ('budget_request', 'Budget request', 'An amount asked for, what it buys and the expected return.', 'finance', 'plan', 'budgeting', 'finance_partner', ARRAY['finance', 'approval']::text[], true, 1, 12),
  ('incident_postmortem', 'Incident postmortem', 'Timeline, cause, impact and follow-ups of an incident.', 'operations', 'operate', 'incident-response', 'sre', ARRAY['operations', 'incident']::text[], true, 1, 13),
  ('run_health_report', 'Run health report', 'How an agent run is doing: progress, errors, retries, cost. Not a deliverable.', 'operations', 'operate', 'agent-operations', 'operator', ARRAY['operations', 'agents', 'health']::text[], false, 1, 14),
  ('agent_heartbeat', 'Agent heartbeat', 'A periodic sign of life from a running agent. Not a deliverable.', 'operations', 'operate', 'agent-operations', 'operator', ARRAY['operations', 'agents', 'health']::text[], false, 1, 15);
