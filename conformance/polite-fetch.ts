/**
 * A fetch that waits out a 429 (Retry-After, at most a minute) and asks again: a deployment's per-client
 * rate limits slow the self-check down instead of failing it.
 */
export async function politeFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(input, init);
    if (response.status !== 429 || attempt >= 3) return response;
    const seconds = Math.min(60, Number(response.headers.get('retry-after')) || 5);
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1_000));
  }
}
