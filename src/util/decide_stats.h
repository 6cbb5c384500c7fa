// The statistics of a decision (issue 41): alternatives measured in paired rounds, each round
// giving per alternative d = ln(metric / baseline's metric), turned the other way round for a
// metric where lower is better, so that d > 0 always means "better than the baseline". Pure
// functions of the d's: no clock, no I/O. Checked against scipy (tests/stats_reference.py) and by
// simulation (tests/test_decide.cpp).
//
// The estimate is the geometric-mean ratio exp(mean d) with a t interval of mean(d); the robust
// check is the Hodges-Lehmann estimate (the median of the Walsh averages) with the Wilcoxon
// signed-rank interval, exact for up to 50 rounds without ties or zeros, else the normal
// approximation with the tie correction (zeros dropped, as scipy's zero_method "wilcox").
//
// Looking after every round. A decision looks at the d's after every round from the 6th, and
// stops once each alternative is decided: a plain 95% interval, looked at that often, would call
// two identical systems different far more often than 5% of the time (stopping at the first
// p < 0.05 over 20 looks does so about a quarter of the time). The intervals here are repeated
// confidence intervals (Jennison & Turnbull 1989) of a group-sequential design: looks at rounds
// min_rounds..max_rounds, the error alpha spent over them by the Lan-DeMets spending function of
// Pocock's type, alpha * ln(1 + (e - 1) * n / max_rounds). The boundaries are computed exactly for
// that schedule (the recursive integration of Armitage, McPherson and Rowe over the sum's
// sub-density), and each look's z boundary is carried to the t distribution of its n - 1 degrees
// of freedom at the same nominal level (the significance-level approach, Jennison & Turnbull
// ch. 14), since the spread of d is estimated. Every interval of the sequence holds the true
// ratio at once with probability 1 - alpha, whatever rule chose when to stop; so a verdict read
// at any look, and the interval reported when the rounds stop, keep their level. (Exact for a
// known spread; with it estimated the carry to t is the standard approximation: a few tenths of
// a percent short over 25 looks with normal data, conservative with the heavy tails of real runs.
// tests/test_decide.cpp simulates both.)
//
// Why this and not an always-valid confidence sequence: both are valid under a look after every
// round; a confidence sequence never needs a last round, but over 6-30 rounds its intervals are
// about 1.65-1.75 times the fixed-sample t interval's width (Lai's t mixture), where these are
// 1.33-1.59 times. A decision has a budget (--max-rounds) in any case, so the narrower intervals
// win: fewer rounds for the same verdict. Pocock's type spends early, so clear differences stop
// after a few rounds; stopping before max_rounds (a --max-time budget, every alternative decided)
// leaves the rest of alpha unspent, which keeps the guarantee.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mw::decide {

// Student's t distribution with df degrees of freedom: P(T > t), and its inverse for 0 < p < 1.
double t_sf(double t, double df);
double t_isf(double p, double df);

// The Wilcoxon signed-rank test of d against 0, two-sided, zeros dropped: W+ (the sum of the
// ranks of |d| of the positive d's), the two-sided p-value, and whether it is exact (scipy's
// method "exact": at most kExactRanks non-zero values, no ties among |d|) or the normal
// approximation with the tie correction and without continuity correction (scipy's "approx").
struct SignedRank {
  double w_plus = 0;
  double p = 1;
  bool exact = false;
  size_t n = 0;  // the non-zero d's
};
constexpr size_t kExactRanks = 50;
SignedRank signed_rank(std::span<const double> d);
// The null distribution of W+ over n values: counts[w] of the 2^n sign patterns whose W+ is w
// (w = 0 .. n(n+1)/2); exact in doubles up to n = kExactRanks.
std::vector<double> signed_rank_counts(size_t n);

// The Hodges-Lehmann estimate of the centre of d (the median of the n(n+1)/2 Walsh averages
// (d_i + d_j) / 2, i <= j) and the signed-rank interval: the k-th smallest and k-th largest Walsh
// average, k from the exact null distribution of W+ (or its normal approximation, as the test
// above) so that the interval covers the centre with at least `confidence`; `achieved` is that
// coverage (exact) or `confidence` (approximation). With too few values for the level, the
// widest interval (k = 1) and its coverage.
struct Located {
  double estimate = 0, lo = 0, hi = 0;
  double achieved = 0;
  bool exact = false;
};
Located walsh_interval(std::span<const double> d, double confidence);

// The Lan-DeMets spending function of Pocock's type: the error spent by information fraction t.
double pocock_spending(double t, double alpha);
// Two-sided z boundaries of a group-sequential design with looks at `looks` (increasing sample
// sizes, information proportional to them) out of `max_n`: at look k the test stops when
// |Z_k| >= b_k, and the probability of stopping by look k under the null is
// pocock_spending(looks[k] / max_n, alpha).
std::vector<double> sequential_boundaries(const std::vector<int>& looks, int max_n, double alpha);

// What a decision asks and when it looks.
struct Settings {
  double margin = 0.05;  // the band [1/(1+m), 1+m] within which a difference does not matter
  double alpha = 0.05;   // of the two-sided intervals; equivalence uses 2 * alpha (TOST)
  int min_rounds = 6;    // the first look
  int max_rounds = 30;   // the last look (the schedule's end)
};
constexpr int kMinRounds = 6;
constexpr int kMaxRounds = 1000;

// The repeated intervals' multipliers of the standard error s/sqrt(n) at each look n, for one
// Settings (computed once: the boundaries' integration takes a few ms at 1,000 looks).
class Schedule {
 public:
  explicit Schedule(const Settings& s);
  const Settings& settings() const { return s_; }
  // The t multiplier at n rounds of data for the 1 - alpha intervals (wide: false) or the
  // 1 - 2 alpha ones (TOST); n beyond max_rounds takes the last look's level.
  double multiplier(int n, bool tost = false) const;
  // The nominal two-sided level of a single look's interval at n (1 - its p): what the robust
  // check's interval is computed at.
  double level(int n, bool tost = false) const;

 private:
  Settings s_;
  std::vector<double> z95_, z90_;  // the z boundaries per look, from min_rounds
  std::vector<double> t95_, t90_;  // their t multipliers
  double z_at(int n, bool tost) const;
};

enum class Verdict : uint8_t {
  Undecided,              // no interval decides yet (or fewer than min_rounds)
  Faster,                 // the 1 - alpha interval wholly above 1 + margin
  Slower,                 // wholly below 1 / (1 + margin)
  Equivalent,             // the 1 - 2 alpha interval inside the band (TOST)
  DifferentWithinMargin,  // the 1 - alpha interval excludes 1 and lies inside the band
};
// "undecided", "faster", "slower", "equivalent", "different-within-margin"; parse_verdict is its
// inverse (nullopt for any other text).
const char* verdict_name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view name);

// The decision's figures at one look: on the ratio's scale (better / baseline, > 1 better).
struct Estimate {
  int n = 0;                  // rounds of data
  bool looked = false;        // n >= min_rounds: the intervals below are the sequence's
  double mean = 0, sd = 0;    // of d (sd: n - 1 in the denominator)
  double ratio = 1;           // exp(mean d): the geometric mean of the per-round ratios
  double lo = 0, hi = 0;      // the repeated 1 - alpha interval
  double lo90 = 0, hi90 = 0;  // the repeated 1 - 2 alpha interval
  double level = 0;           // the nominal level a single look's interval here has (for the robust check)
  // The robust check at the same nominal levels: Hodges-Lehmann with the signed-rank intervals.
  bool robust = false;  // computed
  Located hl, hl90;     // on the ratio's scale (exp of the Walsh averages' figures)
  Verdict robust_verdict = Verdict::Undecided;
  bool disagree = false;  // the two verdicts differ, or the HL estimate is outside the t interval
  Verdict verdict = Verdict::Undecided;
  // Undecided: the rounds in all the current mean and spread would need for a verdict (at least
  // n + 1); 0 when none within kMaxRounds would (the ratio sits on a threshold).
  int rounds_needed = 0;
};
// The verdict of a 1 - alpha interval [lo, hi] and a 1 - 2 alpha one on the log scale against
// the margin's band [-M, M], M = ln(1 + margin).
Verdict classify(double lo, double hi, double lo90, double hi90, double margin);
// d: the per-round log ratios, in the order of the rounds. with_robust: also the robust check (a
// sort of n(n+1)/2 Walsh averages; the stopping rule reads only the verdict).
Estimate estimate(std::span<const double> d, const Schedule& s, bool with_robust = true);

// A one-sided question about one alternative's ratio: --expect 'B>=1.05' (at least), 'B<=0.95'
// (at most), --noninferior 0.9 (at least 0.9 for every alternative). Answered by the repeated
// 1 - 2 alpha interval's bound (a one-sided test at alpha).
struct Question {
  bool at_least = true;
  double ratio = 1;
};
enum class Outcome : uint8_t { Undecided, Met, Failed };
const char* outcome_name(Outcome o);  // "undecided", "met", "failed"
std::optional<Outcome> parse_outcome(std::string_view name);
Outcome answer(const Estimate& e, const Question& q);
// "B>=1.05", "C<=0.9", "B>1.05": the alternative's name (before the operator, trimmed) and the
// question; throws SetupError naming --expect for anything else (a ratio in (0, 1000]).
std::pair<std::string, Question> parse_expect(const std::string& text);
std::string question_text(const Question& q);  // ">=1.05"

// Whether an alternative needs no more rounds: its one-sided questions all answered (when it has
// any: they are what was asked), else its verdict decided.
bool settled(const Estimate& e, std::span<const Question> questions);

// The order of the alternatives in each round: a fresh random order every round, balanced in
// blocks of k rounds so that each alternative runs first exactly once per block (which goes first
// in which round of the block, and the order of the rest, at random).
class RoundOrder {
 public:
  RoundOrder(int k, uint64_t seed);
  std::vector<int> next();

 private:
  int k_;
  std::mt19937_64 rng_;
  std::vector<int> firsts_;  // this block's first alternatives, one a round
  size_t at_ = 0;
};

// The trend of d over the rounds: its least-squares slope per round (0 with fewer than 3).
double slope(std::span<const double> d);

}  // namespace mw::decide
