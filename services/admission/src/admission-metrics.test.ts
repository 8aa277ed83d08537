import { MetricsRegistry, processMetrics } from '@svc/service-kit';
import { recordFailOpen, recordWebhookCall, registerIsolationMetrics, timeStep } from './admission-metrics';
import { WebhookIsolation } from './webhook/isolation';

describe('admission metrics', () => {
  test("a webhook's isolation shows in apiserver_admission_webhook_* gauges, and goes with its dispatcher", async () => {
    const registry = new MetricsRegistry();
    const isolation = new WebhookIsolation({ failures: 2, backoffMs: 1000, maxBackoffMs: 4000, now: () => 0 });
    const target = { id: 'cfg/hook/0', configuration: 'cfg', webhook: 'hook.example.com' };
    const remove = registerIsolationMetrics(isolation, registry);
    isolation.failed(target);
    isolation.failed(target);
    expect(isolation.gate(target).call).toBe(false);
    let text = (await registry.render(undefined)).body;
    expect(text).toContain('apiserver_admission_webhook_isolated{configuration="cfg",name="hook.example.com"} 1');
    expect(text).toContain('apiserver_admission_webhook_isolations{configuration="cfg",name="hook.example.com"} 1');
    expect(text).toContain('apiserver_admission_webhook_isolation_skipped_calls{configuration="cfg",name="hook.example.com"} 1');
    remove();
    text = (await registry.render(undefined)).body;
    expect(text).not.toContain('name="hook.example.com"');
  });

  test('webhook calls, rejections, failures that failed open and steps are recorded with the original names', async () => {
    recordWebhookCall({ name: 'deny.example.com', mutating: false, operation: 'CREATE', started: performance.now(), httpCode: 200, rejectedWith: 403 });
    recordWebhookCall({ name: 'down.example.com', mutating: true, operation: 'UPDATE', started: performance.now(), httpCode: 0, failed: true });
    recordFailOpen('down.example.com', true);
    await expect(timeStep('validate', 'CREATE', () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await timeStep('admit', 'CREATE', async () => 1);
    // These live on the process's registry (declared on first use).
    const text = (await processMetrics.render(undefined)).body;
    expect(text).toContain('apiserver_admission_webhook_rejection_count{name="deny.example.com",type="validating",operation="CREATE",error_type="no_error",rejection_code="403"} 1');
    expect(text).toContain('apiserver_admission_webhook_rejection_count{name="down.example.com",type="admit",operation="UPDATE",error_type="calling_webhook_error",rejection_code="0"} 1');
    expect(text).toContain('apiserver_admission_webhook_admission_duration_seconds_count{name="deny.example.com",type="validate",operation="CREATE",rejected="true"} 1');
    expect(text).toContain('apiserver_admission_webhook_fail_open_count{name="down.example.com",type="admit"} 1');
    expect(text).toContain('apiserver_admission_step_admission_duration_seconds_count{type="validate",operation="CREATE",rejected="true"} 1');
    expect(text).toContain('apiserver_admission_step_admission_duration_seconds_count{type="admit",operation="CREATE",rejected="false"} 1');
    expect(text).toContain('# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] ');
  });
});
