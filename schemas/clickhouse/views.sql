-- Views people query. Each reads the projections with FINAL, so re-delivered or replayed rows count once.

-- The comparison table of an evaluation: one row per scenario, per evaluator version.
CREATE VIEW IF NOT EXISTS v_comparisons AS
SELECT
    evaluation_id,
    evaluator_version,
    baseline_agent,
    candidate_agent,
    scenario_name,
    severity,
    classification,
    reason,
    divergence_kind,
    divergence_summary,
    divergence_impact,
    baseline_status,
    candidate_status
FROM comparisons FINAL;

-- Classification counts per evaluation and evaluator version.
CREATE VIEW IF NOT EXISTS v_comparison_counts AS
SELECT
    evaluation_id,
    evaluator_version,
    baseline_agent,
    candidate_agent,
    classification,
    count() AS cases
FROM comparisons FINAL
GROUP BY evaluation_id, evaluator_version, baseline_agent, candidate_agent, classification;

-- Contradictions: the agent claimed SUCCESS where verification found FAILURE or PARTIAL. `claim_inferred_by`
-- is null when the agent stated its claim, else the classifier that read it from the final answer (with the
-- rule that decided and its confidence: docs/guides/claims.md).
CREATE OR REPLACE VIEW v_contradictions AS
SELECT
    alert_id,
    evaluator_version,
    tenant,
    agent,
    agent_version,
    tool,
    subject,
    trace_id,
    case_id,
    evaluation_id,
    scenario_name,
    claimed_status,
    claim_inferred_by,
    claim_rule,
    claim_confidence,
    verified_status,
    source,
    detected_at,
    detail
FROM contradictions FINAL
WHERE kind = 'contradiction';

-- Contradictions by agent, version, tool and hour.
CREATE VIEW IF NOT EXISTS v_contradictions_by_agent AS
SELECT
    agent,
    agent_version,
    tool,
    toStartOfHour(detected_at) AS hour,
    evaluator_version,
    count() AS contradictions
FROM contradictions FINAL
WHERE kind = 'contradiction'
GROUP BY agent, agent_version, tool, hour, evaluator_version;

-- One-sided outcome entries past the horizon: claims never verified, verifications without a claim.
CREATE OR REPLACE VIEW v_unmatched_outcomes AS
SELECT kind, evaluator_version, tenant, trace_id, subject, agent, agent_version, claimed_status, claim_inferred_by,
    claim_rule, claim_confidence, verified_status, detected_at, detail
FROM contradictions FINAL
WHERE kind != 'contradiction';

-- Spans and verified outcomes from outside whose event time is beyond the documented skew from the time
-- the pipeline received them (streams/clock.py): flagged, never trusted for horizons.
CREATE VIEW IF NOT EXISTS v_clock_skew AS
SELECT 'span' AS event, tenant, trace_id, span_id AS id, occurred_at, received_at, clock_skew
FROM spans FINAL
WHERE clock_skew IS NOT NULL
UNION ALL
SELECT 'verified_outcome' AS event, tenant, trace_id, evaluator_version AS id, occurred_at, received_at, clock_skew
FROM verified_outcomes FINAL
WHERE clock_skew IS NOT NULL;

-- Verdicts side by side per evaluator version (a replay adds a version; the old rows stay).
CREATE VIEW IF NOT EXISTS v_verdicts_by_evaluator AS
SELECT
    case_id,
    evaluation_id,
    side,
    scenario_name,
    agent,
    agent_version,
    evaluator_version,
    status,
    reason,
    labels
FROM verdicts FINAL;

-- Expectation results per evaluator version, with the evaluator that produced each one.
CREATE VIEW IF NOT EXISTS v_expectation_results AS
SELECT
    r.case_id AS case_id,
    r.evaluation_id AS evaluation_id,
    r.side AS side,
    c.agent AS agent,
    c.agent_version AS agent_version,
    r.scenario_name AS scenario_name,
    r.evaluator_version AS evaluator_version,
    r.expectation_id AS expectation_id,
    r.expectation_type AS expectation_type,
    r.critical AS critical,
    r.status AS status,
    r.label AS label,
    r.evaluator AS evaluator,
    r.evaluator_impl_version AS evaluator_impl_version,
    r.reason AS reason
FROM expectation_results AS r FINAL
LEFT JOIN cases AS c FINAL ON c.case_id = r.case_id;

-- Tool-call and retry statistics from the twin's records (retry = the shared retry rule).
CREATE VIEW IF NOT EXISTS v_tool_call_stats AS
SELECT
    c.agent AS agent,
    c.agent_version AS agent_version,
    t.tool AS tool,
    count() AS calls,
    countIf(t.status = 'ok') AS ok,
    countIf(t.status != 'ok') AS failed,
    countIf(t.retry) AS retries,
    countIf(t.mutated) AS mutations,
    countIf(t.replayed) AS replays,
    countIf(t.fault IS NOT NULL) AS faulted,
    sum(t.delay_ms) AS delay_ms
FROM twin_calls AS t FINAL
INNER JOIN cases AS c FINAL ON c.case_id = t.case_id
WHERE t.kind = 'tool' AND NOT t.redelivered
GROUP BY agent, agent_version, tool;

-- Release gate decisions: one row per decision (latest last); a review and `agenttwin gate` add a new one.
CREATE VIEW IF NOT EXISTS v_gate_decisions AS
SELECT
    evaluation_id,
    evaluator_version,
    baseline_agent,
    candidate_agent,
    decision,
    summary,
    blocking,
    warnings,
    cases,
    policy_name,
    policy_hash,
    occurred_at AS decided_at,
    reasons_json
FROM gate_decisions FINAL;

-- Production traces, one row each: the outcome join's latest reading (agent, tools, final answer, claim).
-- `claim_inferred_by` is null when the agent stated its claim, else the classifier that read the final answer.
CREATE OR REPLACE VIEW v_production_traces AS
SELECT
    tenant,
    trace_id,
    agent,
    agent_version,
    tools,
    failed_tools,
    write_tool,
    subjects,
    final_answer,
    claimed_status,
    claim_inferred_by,
    claim_rule,
    claim_confidence,
    revision AS spans_read,
    received_at
FROM claims FINAL;

-- Tool calls of production agents per tenant, agent, version and tool: calls, errors (streams/span_reading.py
-- says what an error is), and latency percentiles in milliseconds. The agent and version are the trace's
-- (v_production_traces) when known, else what the tool's own span names.
CREATE OR REPLACE VIEW v_production_tool_stats AS
SELECT
    s.tenant AS tenant,
    coalesce(nullIf(c.agent, ''), s.agent_name) AS agent,
    coalesce(nullIf(c.agent_version, ''), s.agent_version) AS agent_version,
    s.tool_name AS tool,
    count() AS calls,
    countIf(s.tool_error IS NOT NULL) AS errors,
    round(countIf(s.tool_error IS NOT NULL) / count(), 4) AS error_rate,
    round(quantileExact(0.5)((s.end_unix_nano - s.start_unix_nano) / 1e6), 3) AS p50_ms,
    round(quantileExact(0.95)((s.end_unix_nano - s.start_unix_nano) / 1e6), 3) AS p95_ms
FROM (
    SELECT tenant, trace_id, tool_name, tool_error, agent_name, agent_version, start_unix_nano, end_unix_nano
    FROM spans FINAL
    WHERE tool_name IS NOT NULL AND source = 'production' AND NOT startsWith(ifNull(tenant, ''), 'sim:')
) AS s
LEFT JOIN (SELECT tenant, trace_id, agent, agent_version FROM claims FINAL) AS c
    ON ifNull(c.tenant, '') = ifNull(s.tenant, '') AND c.trace_id = s.trace_id
GROUP BY tenant, agent, agent_version, tool;

-- The version watch (docs/guides/versions.md): each agent version's one-minute windows of production traffic,
-- latest revision, with the rates the sequential test compares (contradictions and verified failures over
-- verified traces, escalations over traces).
CREATE OR REPLACE VIEW v_version_windows AS
SELECT
    tenant,
    agent,
    agent_version,
    window_start,
    traces,
    verified_traces,
    claimed_success,
    claimed_failure,
    claimed_partial,
    claimed_escalated,
    claimed_refused,
    claimed_unknown,
    verified_success,
    verified_partial,
    verified_failure,
    verified_unknown,
    contradictions,
    verified_failures,
    tool_errors,
    escalations,
    if(verified_traces = 0, NULL, round(contradictions / verified_traces, 4)) AS contradiction_rate,
    if(verified_traces = 0, NULL, round(verified_failures / verified_traces, 4)) AS verified_failure_rate,
    if(traces = 0, NULL, round(escalations / traces, 4)) AS escalation_rate
FROM version_windows FINAL;

-- Version alarms: every VersionRegressed with its state (open until a VersionCleared closes it).
CREATE OR REPLACE VIEW v_version_alarms AS
SELECT
    r.tenant AS tenant,
    r.agent AS agent,
    r.baseline_version AS baseline_version,
    r.candidate_version AS candidate_version,
    r.metric AS metric,
    r.baseline_rate AS baseline_rate,
    r.candidate_rate AS candidate_rate,
    r.baseline_traces AS baseline_traces,
    r.candidate_traces AS candidate_traces,
    r.e_value AS e_value,
    r.threshold AS threshold,
    r.policy AS policy,
    r.detected_at AS detected_at,
    r.contradicted_traces AS contradicted_traces,
    if(c.alarm_id = '', 'open', 'cleared') AS state,
    if(c.alarm_id = '', NULL, c.replaced_by) AS replaced_by,
    r.alarm_id AS alarm_id
FROM version_regressions AS r FINAL
LEFT JOIN (SELECT ifNull(alarm_id, '') AS alarm_id, any(replaced_by) AS replaced_by FROM version_clearances FINAL
           WHERE alarm_id IS NOT NULL GROUP BY alarm_id) AS c
    ON c.alarm_id = r.alarm_id;
