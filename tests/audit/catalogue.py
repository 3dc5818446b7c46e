"""The catalogue of audit scenarios: every dpframe aggregate and mechanism on worst-case
neighbours, the findings of the 0.1 review, and the positive controls (broken on purpose)."""

from __future__ import annotations

from ._controls import (
    half_noise_spec,
    halved_sum_sensitivity,
    low_selection_threshold,
    understated_sensitivity,
)
from .findings import (
    FINDING_FAST,
    FINDING_FAST_COSTLY,
    FINDING_TRIALS,
    finding_categories,
    finding_change_one_sum,
    finding_complex_merges_one,
    finding_csv_hex_integers,
    finding_dask_bool_beside_numbers,
    finding_dask_distinct_dtypes,
    finding_dask_measured_key_dtypes,
    finding_dask_text_in_measured_key,
    finding_dask_text_in_numbers,
    finding_dask_unit_dtypes,
    finding_data_warning,
    finding_decimal_spelling,
    finding_dictionary,
    finding_dst_fold,
    finding_empty,
    finding_far_date,
    finding_huge_integer_label,
    finding_integer_sum_past_int64,
    finding_list_key,
    finding_measured_public_key,
    finding_mixed_gaussian,
    finding_mixed_units,
    finding_nonconforming_batch,
    finding_null_dictionary_unit,
    finding_order,
    finding_spelling,
    finding_str_enum_label,
    finding_time_hash_split,
    finding_time_spelling,
    finding_unit_spellings,
    finding_unsigned_dictionary,
    finding_zoneless_time_label,
)
from .findings_bounds import finding_rows_per_group, finding_total_across_groups
from .findings_bounds_choice import finding_bound_choice
from .findings_cli import finding_cli_csv_inferred_types
from .findings_continual import (
    finding_continual_horizon,
    finding_continual_rerun,
    no_levels_factor,
    rerun_draws_again,
)
from .findings_csv_quoting import finding_scan_unbalanced_quote
from .findings_csv_types import (
    finding_scan_csv_fraction_switches_mechanism,
    finding_scan_csv_text_refuses_sum,
)
from .findings_dask import (
    finding_dask_big_ints_in_object,
    finding_dask_bool_ones_in_object,
    finding_dask_distinct_conformed,
    finding_dask_key_spelling,
    finding_dask_span_after_charge,
    finding_dask_time_unit_words,
)
from .findings_dask_distinct import finding_dask_distinct_nonconforming
from .findings_diag import dropped_not_capped, finding_diagnostics_counts
from .findings_gaussian import finding_analytic_gaussian, two_percent_less_sigma
from .findings_i44_e import gaussian_key_selection, l2_understated
from .findings_joint_mean import finding_joint_k_norm, half_box
from .findings_joint_quantiles import (
    finding_joint_exact,
    finding_joint_sampling,
    halved_joint_sensitivity,
    quadrupled_joint_rate,
)
from .findings_keys import (
    finding_gaussian_count_l2,
    finding_rows_stability,
    l2_rounded_down,
    reach_one,
)
from .findings_ledger4 import file_ledger_composition, recomposition_ignores_one_event
from .findings_ledger_rho import finding_forged_rho, open_without_recount
from .findings_local import finding_local_invalid_value, finding_local_spelling
from .findings_local_categories import finding_local_categorical_levels
from .findings_mode import finding_mode, mode_whole_epsilon_per_group
from .findings_pld import composition_ignores_one_event, pld_session_composition
from .findings_projection import finding_projected_histogram, true_total
from .findings_quant import finding_quantile_cells, halved_quantile_sensitivity
from .findings_rollup import (
    finding_rollup_rows,
    finding_rollup_units,
    levels_charged_as_one,
    levels_for_one_row,
)
from .findings_round4_a import (
    drops_not_carried,
    finding_dask_partition_drops,
    finding_diagnostics_provenance,
    finding_scan_heavy_slice_drops,
    provenance_without_noise,
)
from .findings_round4_b import (
    by_value_only,
    finding_not_utf8,
    finding_object_column_work,
    utf8_unchecked,
)
from .findings_round4_c import (
    decimals_as_floats,
    finding_spark_decimal_units,
    finding_spark_heavy_unit,
    finding_spark_text_not_utf8,
    no_preselection,
    text_read_as_utf8,
)
from .findings_round4_d import finding_bounds_choice_undeclared_csv_unit, undeclared_unit_read
from .findings_runs import replay_redraws, run_id_full_disk, run_id_replay
from .findings_scan import (
    finding_scan_csv_time,
    finding_scan_empty_second_file,
    finding_scan_encoding_byte,
    finding_scan_generated_names,
    finding_scan_long_field,
    finding_scan_null_column,
    finding_scan_uint64_ids,
    finding_scan_union_dataset,
)
from .findings_selection import finding_row_level_thresholded_count
from .findings_spark import finding_spark_nan_spelling, nan_not_missing
from .findings_two_stage import exact_stage_two_count, finding_two_stage_mean
from .grouped import (
    enforced,
    grouped_agg,
    grouped_count,
    grouped_count_distinct,
    grouped_mean,
    grouped_quantile,
    grouped_sum,
    grouped_var,
    histogram,
    multi_group,
    sampled_count,
    selection,
)
from .mechanisms import core_noise, core_pf, gaussian_spec, geometric_spec, granular_spec
from .scenario import Scenario
from .ungrouped import (
    SCALAR_TRIALS,
    scalar_count,
    scalar_mean,
    scalar_quantile,
    scalar_sum,
    scalar_user_sum,
)
from .value_bounds import every_row_of_a_unit, unit_level_bounds

SCENARIOS: tuple[Scenario, ...] = (
    # raw mechanisms
    Scenario("core: geometric (integer Laplace)", "0 vs 1, sensitivity 1",
             core_noise(geometric_spec, True), 2_000_000, 200_000),
    Scenario("core: granular Laplace (real)", "0 vs 2.5, sensitivity 2.5",
             core_noise(granular_spec, False), 2_000_000, 200_000),
    Scenario("core: discrete Gaussian", "0 vs 1, L2 sensitivity 1",
             core_noise(gaussian_spec, False), 2_000_000, 200_000),
    Scenario("core: permute-and-flip", "utilities (0,-1,..,-1) vs (-1,0,..,0), 10 candidates",
             core_pf(False), 1_000_000, 100_000),
    # end to end, grouped (many draws per release)
    Scenario("groupby count", "3 vs 4 rows per group", grouped_count("add_remove"),
             500_000, 50_000),
    Scenario("groupby count (change_one)", "a row moves between two groups: (4,3) vs (3,4)",
             grouped_count("change_one"), 250_000, 25_000),
    Scenario("histogram", "2 vs 3 rows per bin", histogram("add_remove"), 500_000, 50_000),
    Scenario("histogram (change_one)", "a row moves between two bins: (3,2) vs (2,3)",
             histogram("change_one"), 250_000, 25_000),
    Scenario("groupby sum", "one more row at U = 10, bounds [-10, 10]",
             grouped_sum("add_remove"), 500_000, 50_000),
    Scenario("groupby sum (change_one)", "a row at L replaced by a row at U, bounds [-10, 10]",
             grouped_sum("change_one"), 500_000, 50_000),
    Scenario("groupby mean", "[0] vs [0, 10], bounds [0, 10]", grouped_mean(),
             500_000, 50_000),
    Scenario("groupby var", "[0, 0] vs [0, 0, 10], bounds [0, 10]", grouped_var(),
             500_000, 50_000),
    Scenario("groupby count_distinct", "values {0, 1, 2} vs {0, 1, 2, 3}",
             grouped_count_distinct(), 500_000, 50_000),
    Scenario("groupby agg count + sum (epsilon split)", "one more row at U = 10, bounds "
             "[-10, 10]", grouped_agg(), 500_000, 50_000),
    Scenario("groupby count, unit in 3 groups", "one unit in 3 groups, max_groups_per_unit=3",
             multi_group("count", 3, 1), 330_000, 33_000),
    Scenario("groupby sum, unit with 2 rows in 2 groups",
             "2 rows at U in 2 groups, max_rows_per_group=2, max_groups_per_unit=2",
             multi_group("sum", 2, 2), 500_000, 50_000),
    Scenario("groupby sum, Gaussian (delta 1e-5)", "one more row at U = 10, bounds [-10, 10]",
             grouped_sum("add_remove", "gaussian"), 500_000, 50_000),
    Scenario("groupby max (exponential mechanism)", "[0, 0] vs [0, 0, 10], 11 candidates",
             grouped_quantile("max"), 500_000, 50_000),
    Scenario("groupby median (exponential mechanism)",
             "[0] vs [0, 8.5], 11 cells of [0, 10]", grouped_quantile("median"),
             500_000, 50_000),
    Scenario("private keys: key with one unit (delta 0.1)", "key with 1 unit vs absent",
             selection(1, 0, 0.1), 500_000, 50_000),
    Scenario("private keys: count near the threshold (delta 1e-3)",
             "13 vs 14 units per key", selection(13, 14, 1e-3), 500_000, 50_000),
    Scenario("private keys: unit alone in 5 keys (delta 0.1)",
             "a unit alone in 5 keys vs absent, max_groups_per_unit=5, max_rows_per_group=1",
             selection(1, 0, 0.1, 5),
             100_000, 10_000),
    Scenario("max_rows_per_unit enforced (groupby sum)",
             "a unit with 10 rows at U = 10, max_rows_per_unit=2", enforced("rows"),
             500_000, 50_000),
    Scenario("max_groups_per_unit enforced (groupby count)",
             "a unit in 5 groups, max_groups_per_unit=1, max_rows_per_group=1",
             enforced("groups"), 100_000, 10_000),
    Scenario("Poisson sample (rate 1/4) + groupby count", "empty group vs one row",
             sampled_count(), 500_000, 50_000),
    # end to end, ungrouped (one draw per release: full audit only)
    Scenario("count", "5 vs 6 rows", scalar_count("add_remove"), SCALAR_TRIALS),
    Scenario("count(col) (change_one)", "a value replaced by a missing one",
             scalar_count("change_one"), SCALAR_TRIALS),
    Scenario("sum", "one more row at U = 10, bounds [-10, 10]", scalar_sum("add_remove"),
             SCALAR_TRIALS),
    Scenario("sum (change_one)", "a row at L replaced by a row at U, bounds [-10, 10]",
             scalar_sum("change_one"), SCALAR_TRIALS),
    Scenario("sum, Gaussian (delta 1e-5)", "one more row at U = 10, bounds [-10, 10]",
             scalar_sum("add_remove", "gaussian"), 1000),
    Scenario("user-level sum", "a unit with 3 rows at U = 10, max_rows_per_unit=3",
             scalar_user_sum("add_remove"), SCALAR_TRIALS),
    Scenario("user-level sum (change_one)",
             "3 rows at 10 replaced by 1 row at 5, bounds [5, 10], max_rows_per_unit=3",
             scalar_user_sum("change_one"), SCALAR_TRIALS),
    Scenario("mean", "[0] vs [0, 10], bounds [0, 10]", scalar_mean(), SCALAR_TRIALS),
    Scenario("max (exponential mechanism)", "[0, 0] vs [0, 0, 10], 2 candidates",
             scalar_quantile("max"), SCALAR_TRIALS),
    Scenario("median (exponential mechanism)", "[0] vs [0, 8.5], 11 cells of [0, 10]",
             scalar_quantile("median"), SCALAR_TRIALS),
    # the findings of the attacker's review of 0.1 (each fails there: docs/audit.md)
    Scenario("finding 1: scan, repeated Arrow dictionary entry", "60 rows 'a' vs 60 + one "
             "'a' under the dictionary's second 'a'", finding_dictionary(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 2: private key spelling", "60 rows with key 1 vs one more spelled True",
             finding_spelling(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 3: order of private keys", "keys 1, 2, 10 vs one more row 'z' "
             "(statistic: position of 10)", finding_order(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 4: mixed Gaussian agg (sum + max)", "the sum measure's stated "
             "(epsilon, delta) against its noise", None, 1, 1,
             exact=finding_mixed_gaussian),
    Scenario("finding 5: change_one sum, bounds [100, 101]", "a row at 101 enters a "
             "filtered frame", finding_change_one_sum(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 6: scan, unit id 0.0 and -0.0", "a person with rows under 0.0 and "
             "-0.0 joins, max_rows_per_unit=1", finding_unit_spellings(), 3 * FINDING_TRIALS,
             3 * FINDING_FAST),
    Scenario("finding 7: empty frame", "no row vs one row at U = 10 (sum)", finding_empty(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 8: a list in a key column", "10 rows vs one more keyed ['a']",
             finding_list_key(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 9: categories from the data", "cities a, b vs one row 'zed' "
             "(statistic: groups released)", finding_categories(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 10: one session, two privacy units", "a person with 10 rows joins; "
             "unit-level then row-level count at 0.5", finding_mixed_units(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 11: a warning raised by the data", "10 rows at 5 vs one more at "
             "1e308 (statistic: warnings the caller sees)", finding_data_warning(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 12: scan, unsigned dictionary indices", "20 rows keyed 'a' or 'b' vs "
             "one more with a missing key (Polars' Categorical)", finding_unsigned_dictionary(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 13: scan, a value its file's batch cannot hold", "20 timestamps in a "
             "second file vs one more past 2262 (statistic: count)",
             finding_nonconforming_batch(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 14: a date past the year 9999", "60 rows on one day vs one more on "
             "a day Python cannot hold (pandas date32[pyarrow], private keys)",
             finding_far_date(), FINDING_TRIALS, FINDING_FAST),
    # 2**23 rows a release: half the trials (200 a side prove about 1.7 on the code before)
    Scenario("finding 15: an integer sum past 2**63", "2**23 - 1 vs 2**23 rows at the "
             "upper bound 2**40 (statistic: sum > 0)", finding_integer_sum_past_int64(),
             FINDING_TRIALS // 2, 60),  # 2**23 rows a trial: the wrap-around flips every sign
    Scenario("finding 16: scan, a measured public key with no row left", "3 rows with "
             "undeclared keys vs one more keyed 7 (the unit column, grouped and summed)",
             finding_measured_public_key(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 17: scan, a null in a dictionary of unit ids", "12 rows of 3 units vs "
             "one more pointing at the dictionary's null value", finding_null_dictionary_unit(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 18: scan, hexadecimal CSV integers", "21 rows, 20 of them 0x10, vs "
             "one more with a blank field (statistic: sum)", finding_csv_hex_integers(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 19: an integer past Python's text limit", "20 object integers vs one "
             "more of 5,001 digits (count_distinct)", finding_huge_integer_label(),
             FINDING_TRIALS, FINDING_FAST),
    # Dask findings: a local cluster per release, so half the fast trials (200 a side still
    # prove about 2.5 on the code before each fix)
    Scenario("finding 20: Dask, unit ids of different dtypes", "20 int64 ids from 2**53 vs "
             "one more, 1.5, in a float64 partition (count at one row per unit)",
             finding_dask_unit_dtypes(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 21: Dask shuffle, unit ids of different dtypes", "200 int64 ids from "
             "2**53 vs one more, 1.5, in a float64 partition (private keys: count of key 'a')",
             finding_dask_unit_dtypes(private_keys=True), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 22: Dask, text in a numeric partition", "two partitions of 20 rows at 5 "
             "vs one more row, 'abc', typing the second object (statistic: sum, bounds [0, "
             "10])", finding_dask_text_in_numbers(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 23: Dask, a measured private key of different dtypes", "100 units "
             "keyed 2**53 and 100 keyed 2**53 + 1 (int64) vs one more keyed 1.5 in a float64 "
             "partition (count('k') by private k; statistic: key 2**53)",
             finding_dask_measured_key_dtypes(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 24: Dask, distinct values of different dtypes", "200 int64 values from "
             "2**53, one per unit, vs one more, 1.5, in a float64 partition (count_distinct)",
             finding_dask_distinct_dtypes(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 25: Dask, text in a measured key", "two partitions of 20 rows keyed 5.0 "
             "vs one more row keyed 'abc', typing the second object (sum('k') by k; bounds "
             "[0, 10])", finding_dask_text_in_measured_key(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 26: Dask, bool beside numbers in a bucket", "two partitions of 20 units "
             "at True vs one more unit, 'abc', typing the second object (unit-level sum, bounds "
             "[0, 1])", finding_dask_bool_beside_numbers(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 27: an object key complex(1, 0) beside 1", "25 rows keyed 1 and 25 "
             "keyed 'a' vs one more row keyed complex(1, 0) first (statistic: count of key 1)",
             finding_complex_merges_one(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 28: a date-time key spelled np.datetime64", "60 object rows keyed "
             "Timestamp('2024-01-01') vs one more spelled np.datetime64 first (private keys; "
             "statistic: a Timestamp released)", finding_time_spelling(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 29: one unit under two date-time spellings", "10 units vs one more "
             "person, 3 rows as a Timestamp with nanoseconds and 3 as the equal np.datetime64 "
             "(count, max_rows_per_unit=3)", finding_time_hash_split(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 30: Polars, the two instants of a DST fall-back hour", "60 rows at "
             "02:30+02:00 Europe/Paris vs one more at 02:30+01:00 (private keys; statistic: a "
             "key labelled fold=1)", finding_dst_fold(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 31: scan, uint64 ids through float64", "int64 ids 1, 2, 3 and uint64 "
             "ids 2**60 + i (20) vs one more id, 2**64 - 1, in the uint64 file "
             "(count_distinct)", finding_scan_uint64_ids(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 32: scan, a CSV column blank in the first file", "a blank first file, "
             "then 20 rows keyed 1 and 5 keyed 2, vs one more row keyed 'z' (count at one "
             "row per unit)", finding_scan_null_column(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 33: scan, a malformed CSV time of day", "2 + 20 times of day vs one "
             "more row '25:99:00' in the second file (count of t)", finding_scan_csv_time(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 34: scan, a pyarrow union of datasets", "int64 1, 2, 3 and uint64 "
             "values, both pinned to int64, vs one more value 2**64 - 5 (count)",
             finding_scan_union_dataset(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 35: scan, an empty second CSV file", "a second file holding one row vs "
             "the same file emptied to 0 bytes (count)", finding_scan_empty_second_file(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 36: scan, a CSV field longer than the read block", "20 rows vs one "
             "more with a field of 2 MiB + 10 bytes (count)", finding_scan_long_field(),
             FINDING_TRIALS // 2, FINDING_FAST_COSTLY),  # 2 MiB read a release: half the trials
    Scenario("finding 37: local RR, categories implied by spelling", "60 answers True/False "
             "in an object column vs one True spelled 1 (statistic: a bool index)",
             finding_local_spelling(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 38: local k-RR, one invalid answer", "10 answers yes/no/unsure vs the "
             "last 'no' replaced by NaN (statistic: that respondent's report)",
             finding_local_invalid_value(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 39: CLI, CSV column types inferred from the data", "a spec without "
             "[input] types over 200 rows '1,3' vs one more row '1,abc' (statistic: the sum, "
             "refused or not)", finding_cli_csv_inferred_types(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 40: an object key spelled Decimal('0.10')", "60 rows keyed "
             "Decimal('0.1') vs one more spelled Decimal('0.10') first (private keys; "
             "statistic: the key spelled Decimal('0.1'))", finding_decimal_spelling(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 41: an object key that is a str Enum member", "60 rows keyed 'red' vs "
             "one more keyed a str Enum member equal to 'red', first (private keys; statistic: "
             "the text 'red' released)", finding_str_enum_label(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 42: scan, an unbalanced CSV quote", "20 rows vs one more row "
             "'7,\"oops' before them (count)", finding_scan_unbalanced_quote(), FINDING_TRIALS,
             FINDING_FAST),
    Scenario("finding 43: Dask, date-time units in typed and object partitions", "40 "
             "datetime64 units in 10 partitions vs one more person with a text id, typing the "
             "10th object (count, max_rows_per_unit=1)", finding_dask_time_unit_words(),
             FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 44: Dask, integers past 2**53 in an object partition", "two partitions "
             "of 20 int64 values past 2**53 vs one more text value typing the second object "
             "(sum)", finding_dask_big_ints_in_object(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 45: Dask, distinct integers past 2**53 conformed", "int64 partitions "
             "of 2**53 + k vs one more text value typing the second object (count_distinct)",
             finding_dask_distinct_conformed(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 46: Dask, private-key labels of the first partition", "object meta, a "
             "bool partition and an object one vs one more text key typing the first object "
             "(private keys; statistic: bool labels)", finding_dask_key_spelling(),
             FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 47: Dask, a time span in a measured int column", "int64 partitions vs "
             "one more np.timedelta64 typing the second object (sum; raised after the charge)",
             finding_dask_span_after_charge(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 48: Dask, 1s of an object partition under a bool schema", "an int64 "
             "partition of fifty 1s and a bool one of ten True vs one more text value typing "
             "the first object (sum)", finding_dask_bool_ones_in_object(), FINDING_TRIALS,
             FINDING_FAST_COSTLY),
    Scenario("finding 49: a time-of-day key in a zone without offset", "60 object rows keyed "
             "time(1) vs one more keyed time(1, tzinfo=ZoneInfo('Europe/Paris')) first "
             "(private keys; statistic: a zoned key released)", finding_zoneless_time_label(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 50: scan, CSV column names generated from the first line", "20 lines "
             "of two fields vs one more of three fields first (count)",
             finding_scan_generated_names(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 51: scan, a byte the CSV's encoding does not define", "a cp1252 file "
             "of 20 rows vs one more row holding the byte 0x81 (count)",
             finding_scan_encoding_byte(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 52: local RR, categories from a Categorical's levels", "61 answers "
             "a/b made a Categorical vs the last 'a' answered 'Smallville' (statistic: the "
             "reports' number of categories)", finding_local_categorical_levels(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 53: scan, CSV text in a numeric column", "200 rows '1,3' vs one more "
             "row '1,abc' (sum without a declared type, then with one; statistic: refused or "
             "released)", finding_scan_csv_text_refuses_sum(), FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 54: scan, a CSV fraction in an integer column", "200 rows '1,3' vs one "
             "more row '1,1.5' (sum without a declared type, then with one; statistic: an "
             "integer result or not)", finding_scan_csv_fraction_switches_mechanism(),
             FINDING_TRIALS, FINDING_FAST),
    Scenario("finding 56: Gaussian sum calibrated analytically at (1, 1e-5)", "the stated "
             "(epsilon, delta) against the exact profile of the discrete Gaussian drawn (one "
             "more row at the bound of an integer column)", None, 1, 1,
             exact=finding_analytic_gaussian),
    Scenario("BROKEN: analytic Gaussian sum with 2% less sigma", "as finding 56", None, 1, 1,
             expect_violation=True, exact=finding_analytic_gaussian,
             patch=two_percent_less_sigma),
    Scenario("finding 57: private keys at row level, one count released and thresholded "
             "(delta 1e-3)", "key with 1 row vs absent",
             finding_row_level_thresholded_count(1, 0), 500_000, 50_000),
    Scenario("finding 57: private keys at row level, one count released and thresholded "
             "(delta 1e-3), near the threshold", "13 vs 14 rows per key",
             finding_row_level_thresholded_count(13, 14), 500_000, 50_000),
    Scenario("finding 55: Dask, count_distinct of a non-conforming value", "float64 meta, "
             "two partitions of 3 distinct floats vs one more row 'zzz' typing the second "
             "object (count_distinct; claim: epsilon 0, the row is missing under the schema)",
             finding_dask_distinct_nonconforming(), FINDING_TRIALS, FINDING_FAST_COSTLY),
    Scenario("finding 58: max_rows_per_unit=T enforced across groups (grouped sum)",
             "a unit with 10 rows spread over 5 groups at U, T=2 (max_groups_per_unit=5)",
             finding_total_across_groups(), 500_000, 50_000),
    Scenario("finding 58: max_rows_per_group=R enforced (grouped sum)",
             "a unit with 10 rows at U in one group, R=2", finding_rows_per_group(),
             500_000, 50_000),
    Scenario("finding 59: DP choice of contribution bounds (add_remove)",
             "5 units vs one more unit with 1 row (rows/groups/largest-group histograms; "
             "statistic: the sum of the moved bins)", finding_bound_choice("add_remove"),
             200_000, 40_000),
    Scenario("finding 59: DP choice of contribution bounds (change_one)",
             "a unit's 1 row vs 40 rows over 2 groups (every histogram moves two bins)",
             finding_bound_choice("change_one"), 200_000, 40_000),
    Scenario("finding 59: DP choice of contribution bounds (change_one, ungrouped)",
             "a unit's 1 row vs 40 rows (the rows histogram moves two bins; statistic: old "
             "bin minus new bin)", finding_bound_choice("change_one", False), 200_000, 40_000),
    Scenario("finding 60: quantiles over fine cells, with ci= (estimate and rank interval)",
             "every dataset of up to 4 rows on 4 cells against one more row (two with "
             "max_rows_per_unit=2; under change_one also a row moved): the exact laws of "
             "median, quantile(0.25), max and min", None, 1, 1, exact=finding_quantile_cells),
    Scenario("BROKEN: quantile with halved utility sensitivity", "as finding 60", None, 1, 1,
             expect_violation=True, exact=finding_quantile_cells,
             patch=halved_quantile_sensitivity),
    Scenario("finding 61: diagnostics= counts of rows clamped and dropped (grouped sum, "
             "T=3, k=2, R=2)", "one more unit with 60 rows above the bounds over 6 groups",
             None, 1, 1, exact=finding_diagnostics_counts),
    Scenario("BROKEN: diagnostics= with each unit's dropped rows not capped", "as finding 61",
             None, 1, 1, expect_violation=True, exact=finding_diagnostics_counts,
             patch=dropped_not_capped),
    Scenario("finding 62: Spark, a missing value spelled NaN or null (row-level count)",
             "31 rows, one with x null vs the same with x NaN (grouped count of x, the Spark "
             "SQL plan; claim: epsilon 0, the same data)", None, 1, None,
             exact=finding_spark_nan_spelling),
    Scenario("BROKEN: Spark SQL plan reading only null as missing", "as finding 62", None, 1,
             None, expect_violation=True, exact=finding_spark_nan_spelling,
             patch=nan_not_missing),
    Scenario("finding 66: text whose bytes are not UTF-8 (keys, units, counted values)",
             "3 rows missing vs the same rows with bytes that are not UTF-8 (pandas str "
             "dtype, scan, Polars, Dask; claim: epsilon 0, the same data)", None, 1, 1,
             exact=finding_not_utf8),
    Scenario("BROKEN: text read whatever its bytes", "as finding 66", None, 1, 1,
             expect_violation=True, exact=finding_not_utf8, patch=utf8_unchecked),
    Scenario("finding 67: one int among text keys (timing: work of grouping, not time)",
             "200,000 text keys in the str dtype vs one row an int (object dtype); claim: "
             "ln 1.5, the timing target", None, 1, 1, exact=finding_object_column_work),
    Scenario("BROKEN: an object column read by value, every row", "as finding 67", None, 1,
             1, expect_violation=True, exact=finding_object_column_work, patch=by_value_only),
    Scenario("finding 69: Spark, a key whose bytes are not UTF-8 (private keys, "
             "count_distinct)", "40 rows of 8 units vs one more unit's row keyed by bytes "
             "that are not UTF-8 (a binary column cast to string)", None, 1, None,
             exact=finding_spark_text_not_utf8),
    Scenario("BROKEN: Spark blocks reading text as UTF-8 unchecked", "as finding 69", None, 1,
             None, expect_violation=True, exact=finding_spark_text_not_utf8,
             patch=text_read_as_utf8),
    Scenario("finding 70: Spark, decimal unit ids 2**53 and 2**53 + 1 (count, T=1)",
             "one person's 2 rows vs the second row another person's, whose id rounds to the "
             "same double", None, 1, None, exact=finding_spark_decimal_units),
    Scenario("BROKEN: Spark blocks reading decimals as float64", "as finding 70", None, 1,
             None, expect_violation=True, exact=finding_spark_decimal_units,
             patch=decimals_as_floats),
    Scenario("finding 71: Spark, one unit's rows a worker holds (count, T=2)",
             "unit 0 with 5 rows vs 50,000 (beside 10 units of 10 rows): a worker holding "
             "more than 20,000 rows of one unit, or not", None, 1, None,
             exact=finding_spark_heavy_unit),
    Scenario("BROKEN: Spark exchange without heavy-unit pre-selection", "as finding 71", None,
             1, None, expect_violation=True, exact=finding_spark_heavy_unit,
             patch=no_preselection),
    Scenario("finding 73: contribution_bounds on a CSV, the unit column undeclared",
             "a person whose id is spelled 100, 0100 and 00100 vs without them (exact "
             "histograms of groupby(g).contribution_bounds; the unit undeclared, then int64)",
             None, 1, 1, exact=finding_bounds_choice_undeclared_csv_unit),
    Scenario("BROKEN: contribution_bounds reading an undeclared CSV column as text",
             "as finding 73", None, 1, 1, expect_violation=True,
             exact=finding_bounds_choice_undeclared_csv_unit, patch=undeclared_unit_read),
    Scenario("finding 63: diagnostics= rows_dropped on a scan, a heavy unit written first "
             "(T=1, batches of 2,000, 4 partitions)", "1,000 units of 3 rows vs one more unit "
             "of 1,500 rows, first", None, 1, 1, exact=finding_scan_heavy_slice_drops),
    Scenario("finding 63: diagnostics= rows_dropped on Dask (T=1, 2 partitions; ungrouped, "
             "public and private keys)", "the same 300 units of 2 rows on pandas and on Dask "
             "(claim: epsilon 0, one law)", None, 1, 1, exact=finding_dask_partition_drops),
    Scenario("BROKEN: scan pre-selection losing a heavy slice's dropped rows", "as finding 63 "
             "(scan)", None, 1, 1, expect_violation=True, exact=finding_scan_heavy_slice_drops,
             patch=drops_not_carried),
    Scenario("BROKEN: Dask counting only the bucket's dropped rows", "as finding 63 (Dask)",
             None, 1, 1, expect_violation=True, exact=finding_dask_partition_drops,
             patch=drops_not_carried),
    Scenario("finding 64: diagnostics= provenance states each count's noise scale, epsilon "
             "and rows_dropped_cap", "as finding 61 (the loss the stated figures vouch for)",
             None, 1, 1, exact=finding_diagnostics_provenance),
    Scenario("BROKEN: diagnostics= provenance with the noisy values only", "as finding 64",
             None, 1, 1, expect_violation=True, exact=finding_diagnostics_provenance,
             patch=provenance_without_noise),
    Scenario("bounds() at the unit level (one row per unit, issue 44)",
             "300 units of one row vs one more unit with 40 rows over 40 octaves, T=40",
             None, 1, 1, exact=unit_level_bounds),
    Scenario("BROKEN: bounds() keeping a unit's T rows at one row's sensitivity",
             "as bounds() at the unit level", None, 1, 1, expect_violation=True,
             exact=unit_level_bounds, patch=every_row_of_a_unit),
    Scenario("private keys by distinct units (Gaussian threshold, issue 44)",
             "8 keys of 5 units vs one more unit in those 8 and 4 new keys, k=10 (exact: "
             "the released key sets' hockey-stick divergence over the shared keys' counts)",
             None, 1, 1, exact=gaussian_key_selection),
    Scenario("BROKEN: Gaussian key selection with L2 sensitivity 1, not sqrt(k)",
             "as private keys by distinct units", None, 1, 1, expect_violation=True,
             exact=gaussian_key_selection, patch=l2_understated),
    Scenario("finding 87: a run id re-run (files deleted, then damaged) replays the ledger's "
             "record", "first run and two re-runs of one id (structural: distinct releases x "
             "epsilon, against the ledger's charge)", None, 1, 1, exact=run_id_replay),
    Scenario("finding 88: a full output disk after the charge, recovered by re-running the id",
             "as finding 87, the first file refused with ENOSPC", None, 1, 1,
             exact=run_id_full_disk),
    Scenario("BROKEN: a run id replay that draws the noise again (no charge)", "as finding 87",
             None, 1, 1, expect_violation=True, exact=run_id_replay, patch=replay_redraws),
    Scenario("BROKEN: a full-disk recovery that draws the noise again (no charge)",
             "as finding 88", None, 1, 1, expect_violation=True, exact=run_id_full_disk,
             patch=replay_redraws),
    Scenario("finding 84: histogram projected onto non-negative counts, noisy total kept",
             "3 rows in the first of 8 bins vs one more in the sixth (statistic: the released "
             "total, or a sentinel when the structure is not the empty frame's)",
             finding_projected_histogram(), FINDING_TRIALS, FINDING_FAST),
    Scenario("BROKEN: histogram projected onto its true total", "as finding 84",
             finding_projected_histogram(), FINDING_TRIALS, FINDING_FAST,
             expect_violation=True, patch=true_total),
    # deliberately broken: the audit must find a violation
    Scenario("BROKEN: bound choice with the histograms' sensitivity understated",
             "as finding 59 (change_one, ungrouped)", finding_bound_choice("change_one", False),
             200_000, 40_000, expect_violation=True, patch=understated_sensitivity),
    Scenario("BROKEN: geometric with half the noise", "0 vs 1, sensitivity 1",
             core_noise(half_noise_spec, True), 2_000_000, 200_000, expect_violation=True),
    Scenario("BROKEN: permute-and-flip run at 2 epsilon", "as core: permute-and-flip",
             core_pf(True), 1_000_000, 100_000, expect_violation=True),
    Scenario("BROKEN: groupby sum with halved sensitivity", "as groupby sum",
             grouped_sum("add_remove"), 500_000, 50_000, expect_violation=True,
             patch=halved_sum_sensitivity),
    Scenario("BROKEN: private keys, threshold one too low", "key with 1 unit vs absent",
             selection(1, 0, 0.1), 500_000, 50_000, expect_violation=True,
             patch=low_selection_threshold),
    Scenario("finding 89: continual release, one charge for 64 nights (unit T=3 over the "
             "horizon, keys a/b)", "20 units every night vs one more unit with rows on nights "
             "1, 33 and 40 (exact: node shifts / node scale)", None, 1, 1,
             exact=finding_continual_horizon),
    Scenario("BROKEN: continual node scale without the levels factor", "as finding 89", None,
             1, 1, expect_violation=True, exact=finding_continual_horizon,
             patch=no_levels_factor),
    Scenario("finding 90: continual release, a re-run night replays its nodes", "one row more "
             "on night 2, night 2 re-run (exact: node shifts times noisy copies)", None, 1, 1,
             exact=finding_continual_rerun),
    Scenario("BROKEN: continual re-run drawing fresh noise", "as finding 90", None, 1, 1,
             expect_violation=True, exact=finding_continual_rerun, patch=rerun_draws_again),
    Scenario("finding 82: rollup over declared combinations, every level in one charge",
             "one more row in a city, x at the bound (exact: sum over the 3 levels of the "
             "L1 shift over the scale, counts and sums)", None, 1, 1, exact=finding_rollup_rows),
    Scenario("BROKEN: rollup levels each planned at the whole epsilon", "as finding 82", None,
             1, 1, expect_violation=True, exact=finding_rollup_rows, patch=levels_charged_as_one),
    Scenario("finding 83: rollup at unit level (T=3), rows in an undeclared combination",
             "a unit's 3 rows in 3 cities of one region, or 2 rows in an undeclared "
             "combination, vs without it (exact, as finding 82)", None, 1, 1,
             exact=finding_rollup_units),
    Scenario("BROKEN: rollup levels planned for one row of a unit, not T", "as finding 83",
             None, 1, 1, expect_violation=True, exact=finding_rollup_units,
             patch=levels_for_one_row),
    Scenario("finding 78: Gaussian grouped count at its exact L2 sensitivity (T=10, R=1)",
             "10 keys of 3 units vs one more unit with a row in each (exact: the sum of the "
             "moved counts' discrete Gaussians)", None, 1, 1, exact=finding_gaussian_count_l2),
    Scenario("BROKEN: Gaussian count with L2 sqrt(10) rounded down to 3", "as finding 78",
             None, 1, 1, expect_violation=True, exact=finding_gaussian_count_l2,
             patch=l2_rounded_down),
    Scenario("finding 79: private keys by thresholded row counts (R=3, k=4)",
             "2 keys of 5 units x 3 rows vs one more unit with 3 rows in 6 keys, 4 kept (exact: "
             "per-key privacy losses summed, the shared count swept)", None, 1, 1,
             exact=finding_rows_stability),
    Scenario("BROKEN: rows threshold as if a one-sided key held one row", "as finding 79",
             None, 1, 1, expect_violation=True, exact=finding_rows_stability, patch=reach_one),
    Scenario("finding 80: joint K-norm release of a centred sum and its count (box K)",
             "3 rows of 0 vs one more at the bound 10, per group (the box's corner)",
             finding_joint_k_norm(), 500_000, 50_000),
    Scenario("BROKEN: joint K-norm release with the box K half as wide", "as finding 80",
             finding_joint_k_norm(), 500_000, 50_000, expect_violation=True, patch=half_box),
    Scenario("finding 77: two-stage Gaussian mean (a pilot, then a split it picks)",
             "3 rows at the lower bound 0 vs one more at 10, per group (the sum and the count "
             "both move)", finding_two_stage_mean(), 500_000, 50_000),
    Scenario("BROKEN: two-stage Gaussian mean whose stage 2 reads the true count",
             "as finding 77", finding_two_stage_mean(), 500_000, 50_000,
             expect_violation=True, patch=exact_stage_two_count),
    Scenario("PLD session composition (issue 47)",
             "50 Laplace counts at Session(1, 1e-6).split(50), then one more (exact: the "
             "composed +-eps losses' hockey-stick divergence)", None, 1, 1,
             exact=pld_session_composition),
    Scenario("BROKEN: PLD composition ignoring one event", "as PLD session composition", None,
             1, 1, expect_violation=True, exact=pld_session_composition,
             patch=composition_ignores_one_event),
    Scenario("PLD composition in a ledger file across a reopen (issue 47, schema 4)",
             "25 Laplace counts at Session(1, 1e-6, ledger=file).split(50), reopen, counts "
             "until refused (exact: the composed +-eps losses' hockey-stick divergence)", None,
             1, 1, exact=file_ledger_composition),
    Scenario("BROKEN: ledger-file recomposition ignoring one event",
             "as PLD composition in a ledger file", None, 1, 1, expect_violation=True,
             exact=file_ledger_composition, patch=recomposition_ignores_one_event),
    Scenario("finding 76: a ledger's Gaussian rho total forged in its checkpoint and head",
             "Gaussian counts of a basic Session(1, 1e-6) on a file until refused, rho "
             "rewritten to 1e-9 (no chained row touched), reopen, counts until refused (exact: "
             "the composed Gaussian's epsilon)", None, 1, 1, exact=finding_forged_rho),
    Scenario("BROKEN: ledger open holding the totals to finding 74's bounds only",
             "as finding 76", None, 1, 1, expect_violation=True, exact=finding_forged_rho,
             patch=open_without_recount),
    Scenario("finding 81: mode by permute-and-flip over public candidates (exact law)",
             "every dataset of up to 4 rows on 3 candidates against one more row (two per "
             "unit; grouped T=2, k=2, R=1 over the groups a unit changes; under change_one "
             "also a row moved): the exact law of the released candidate", None, 1, 1,
             exact=finding_mode),
    Scenario("BROKEN: mode with every group at the whole epsilon", "as finding 81", None, 1,
             1, expect_violation=True, exact=finding_mode, patch=mode_whole_epsilon_per_group),
    Scenario("finding 85: several quantiles in one JointExp release (exact law)",
             "every dataset of up to 4 rows on 3 cells against one more row (two with "
             "max_rows_per_unit=2; under change_one also a row moved): the exact law of the "
             "quartiles' cells", None, 1, 1, exact=finding_joint_exact),
    Scenario("BROKEN: JointExp with halved utility sensitivity", "as finding 85", None, 1, 1,
             expect_violation=True, exact=finding_joint_exact, patch=halved_joint_sensitivity),
    Scenario("finding 86: JointExp's sampler (log-space dynamic program, exact draws)",
             "finding 85's worst pair (one more row), statistic: the exact log ratio of the "
             "cells released", finding_joint_sampling, 200_000, 6_000),
    Scenario("BROKEN: JointExp's sampler at four times its rate", "as finding 86",
             finding_joint_sampling, 200_000, 6_000, expect_violation=True,
             patch=quadrupled_joint_rate),
)


def scenario(name: str) -> Scenario:
    """The scenario called ``name``."""
    for s in SCENARIOS:
        if s.name == name:
            return s
    raise KeyError(name)
