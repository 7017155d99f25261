/**
 * What was worked out for a request's key (its path, a header's value), kept for the next request
 * with the same one: the same few keys come again and again. Bounded in number and in key length, and
 * forgotten all at once when full, so keys a caller makes up at random (a scan of paths) cost a
 * working out each, as without it, and no memory.
 */
export class RecentAnswers<Answer> {
  readonly #answers = new Map<string, Answer>();

  constructor(
    private readonly maxKeys: number,
    private readonly maxKeyLength = 256,
  ) {}

  /** The answer kept for `key`, else `workOut()`'s, kept when the key is short enough. */
  get(key: string, workOut: () => Answer): Answer {
    let answer = this.#answers.get(key);
    if (answer === undefined) {
      answer = workOut();
      if (key.length <= this.maxKeyLength) {
        if (this.#answers.size >= this.maxKeys) this.#answers.clear();
        this.#answers.set(key, answer);
      }
    }
    return answer;
  }

  clear(): void {
    this.#answers.clear();
  }
}
