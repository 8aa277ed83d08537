import { onFreshPorts } from './backends';

describe('onFreshPorts', () => {
  const taken = (): Error => new Error('etcd did not start: process for 127.0.0.1:43401 exited before it listened\nlisten tcp 127.0.0.1:43401: bind: address already in use');

  it('starts again on new ports when a picked port was taken before the server bound it', async () => {
    let attempts = 0;
    const started = await onFreshPorts(true, async () => {
      attempts++;
      if (attempts < 3) throw taken();
      return 'up';
    });
    expect([started, attempts]).toEqual(['up', 3]);
  });

  it('gives up after three attempts, and at once for fixed ports or another failure', async () => {
    let attempts = 0;
    await expect(onFreshPorts(true, async () => { attempts++; throw taken(); })).rejects.toThrow('address already in use');
    expect(attempts).toBe(3);
    attempts = 0;
    await expect(onFreshPorts(false, async () => { attempts++; throw taken(); })).rejects.toThrow('address already in use');
    expect(attempts).toBe(1);
    attempts = 0;
    await expect(onFreshPorts(true, async () => { attempts++; throw new Error('etcd did not start: permission denied'); })).rejects.toThrow('permission denied');
    expect(attempts).toBe(1);
  });
});
