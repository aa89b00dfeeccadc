/** `npm run bench -- [--quick] [--large] [--only name,name]`. */
export interface BenchOptions {
  /** Every scenario small, about a minute in all; only correctness is checked. */
  quick: boolean;
  /** Scale with 1,000,000 tasks instead of 100,000. */
  large: boolean;
}
