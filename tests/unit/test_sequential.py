"""The sequential comparison (AdaStop): lander's decisions are the ``adastop`` package's on the same scores, the seeds
and the configurations it launches follow the test, and its keys are checked before anything is made."""

from __future__ import annotations

import numpy as np
import pytest
from adastop import MultipleAgentsComparator

from lander.analysis.sequential import SequentialTest, decision_matrix, read_record, seeds_table
from lander.config.precheck import check_command
from lander.errors import ConfigError
from lander.sweeps.adastop import baseline_index, configurations


def draw(means: list[float], n: int, K: int, seed: int = 1) -> list[np.ndarray]:
    """Scores ``[configurations][n*K]``: normal with these means and standard deviation 1."""
    rng = np.random.default_rng(seed)
    return [rng.normal(mean, 1.0, n * K) for mean in means]


def by_lander(scores: list[np.ndarray], n: int, K: int, baseline: int | None = None) -> SequentialTest:
    """The test run as the sweeper runs it: each interim, the active configurations' next n scores."""
    test = SequentialTest([[f"algo=a{i}"] for i in range(len(scores))], n, K, 0.05, 2000, baseline, seed=3)
    while not test.finished:
        test.add({i: list(scores[i][test.interims * n : (test.interims + 1) * n]) for i in test.active()})
    return test


def by_package(scores: list[np.ndarray], n: int, K: int, comparisons: list[tuple[int, int]]) -> dict[str, str]:
    """The package's own loop (its docstring's), with the same permutations' seed and each pair given both ways, as
    lander gives them (``SequentialTest.oriented``); a pair's decision is its first orientation's, or the opposite
    of its second's."""
    both = [pair for a, b in comparisons for pair in ((a, b), (b, a))]
    test = MultipleAgentsComparator(n=n, K=K, B=2000, comparisons=np.array(both), alpha=0.05, seed=3)
    names = [f"algo=a{i}" for i in range(len(scores))]
    given: dict[str, list[float]] = {name: [] for name in names}
    for k in range(K):
        for i, name in enumerate(names):
            if k == 0 or i in np.array(test.current_comparisons).ravel():  # in a comparison still open
                given[name] += list(scores[i][k * n : (k + 1) * n])
        test.partial_compare({name: np.array(v) for name, v in given.items()}, verbose=False)
        if test.is_finished:
            break
    flip = {"larger": "smaller", "smaller": "larger"}
    decided = {}
    for a, b in comparisons:
        word, reverse = test.decisions[str(np.array((a, b)))], test.decisions[str(np.array((b, a)))]
        decided[str((a, b))] = word if word in flip or reverse not in flip else flip[reverse]
    return decided


CASES = {  # means (in standard deviations), n, K, baseline
    "clear difference": ([0.0, 3.0], 5, 3, None),
    "equal": ([0.0, 0.0], 5, 3, None),
    "three configurations": ([0.0, 0.0, 2.5], 5, 4, None),
    "a baseline": ([0.0, 2.5, 0.2], 4, 3, 0),
}


@pytest.mark.parametrize("case", CASES)
def test_decisions_are_the_adastop_packages_on_the_same_scores(case: str) -> None:
    means, n, K, baseline = CASES[case]
    scores = draw(means, n, K)
    test = by_lander(scores, n, K, baseline)
    expected = by_package(scores, n, K, test.comparisons)
    assert {str(c): test.decision(c, adastop=True) for c in test.comparisons} == expected
    record = test.record("finished")
    # every configuration's scores are its own, in seed order, and as many as the interims it took part in
    for name, values in record["scores"].items():
        index = int(name.removeprefix("algo=a"))
        assert values == list(scores[index][: len(values)]) and len(values) % n == 0
    assert record["runs_used"] == sum(len(v) for v in record["scores"].values()) <= record["fixed_design"]


def test_a_clear_difference_is_decided_at_the_first_interim_and_stops_there() -> None:
    test = by_lander(draw([0.0, 3.0], 5, 3), 5, 3)
    record = test.record("finished")
    assert test.interims == 1 and record["runs_used"] == 10 and record["fixed_design"] == 30
    assert record["decisions"] == [
        {
            "a": "algo=a0",
            "b": "algo=a1",
            "decision": "smaller",
            "adastop_decision": "smaller",
            "interim": 0,
            "mean_a": pytest.approx(np.mean(record["scores"]["algo=a0"])),
            "mean_b": pytest.approx(np.mean(record["scores"]["algo=a1"])),
        }
    ]
    assert decision_matrix(record).loc["algo=a1", "algo=a0"] == "larger (interim 1)"
    assert seeds_table(record)["seeds"].tolist() == [5, 5]


def test_no_difference_is_undecided_after_K_interims_where_adastop_says_equal() -> None:
    test = by_lander(draw([0.0, 0.0], 5, 3), 5, 3)
    (entry,) = test.record("finished")["decisions"]
    assert test.interims == 3 and entry["adastop_decision"] == "equal" and entry["decision"] == "undecided"
    assert entry["interim"] is None


def test_only_configurations_in_an_undecided_comparison_get_more_seeds() -> None:
    test = SequentialTest([["algo=a0"], ["algo=a1"], ["algo=a2"]], 5, 4, 0.05, 2000, baseline=0, seed=3)
    scores = draw([0.0, 6.0, 0.1], 5, 4)
    test.add({i: list(scores[i][:5]) for i in test.active()})
    assert test.decision((0, 1)) == "smaller" and test.decision((0, 2)) == "continue"
    assert test.active() == [0, 2] and test.seeds() == [5, 6, 7, 8, 9]


def test_the_configurations_are_the_sweeps_other_parameters_and_the_baseline_names_one() -> None:
    configs = configurations(["algo=ppo,a2c", "gamma=0.99,0.999", "seed=0,1,2", "env=cartpole"])
    assert configs == [
        ["algo=ppo", "gamma=0.99", "env=cartpole"],
        ["algo=ppo", "gamma=0.999", "env=cartpole"],
        ["algo=a2c", "gamma=0.99", "env=cartpole"],
        ["algo=a2c", "gamma=0.999", "env=cartpole"],
    ]
    assert baseline_index("algo=a2c gamma=0.99", configs) == 2 and baseline_index(None, configs) is None
    with pytest.raises(ValueError, match="names 2 configurations"):
        baseline_index("algo=ppo", configs)


SWEEP = ["--multirun", "algo=ppo,a2c", "env=cartpole", "hydra/sweeper=adastop"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["hydra.sweeper.n=1"], "hydra.sweeper.n=1 is not allowed: n (seeds per configuration per interim)"),
        (["hydra.sweeper.K=0"], "hydra.sweeper.K=0 is not allowed: K (interims) must be an integer >= 1"),
        (["hydra.sweeper.alpha=1.0"], "hydra.sweeper.alpha=1.0 is not allowed: alpha (the family-wise error)"),
        (["hydra.sweeper.B=999"], "hydra.sweeper.B=999 is not allowed: B (random permutations)"),
        (["hydra.sweeper.score=median"], "hydra.sweeper.score='median' is not allowed"),
        (["seed=0,1"], "seed: hydra/sweeper=adastop chooses the seeds"),
        (["hparams_search=ppo_optuna"], "hparams_search is a search of its own"),
        (["hydra.sweeper.baseline='algo=dqn'"], "hydra.sweeper.baseline='algo=dqn' must name one configuration"),
    ],
)
def test_bad_adastop_keys_are_refused_in_one_line(extra: list[str], said: str) -> None:
    with pytest.raises(ConfigError, match="^" + said.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_command([*SWEEP, *extra])


def test_adastop_needs_a_sweep_of_two_configurations() -> None:
    with pytest.raises(ConfigError, match="sweep at least two"):
        check_command(["--multirun", "algo=ppo", "env=cartpole", "hydra/sweeper=adastop"])
    with pytest.raises(ConfigError, match="add --multirun"):
        check_command(["algo=ppo", "env=cartpole", "hydra/sweeper=adastop"])
    assert check_command([*SWEEP, "hydra.sweeper.n=2", "hydra.sweeper.baseline='algo=ppo'"])  # a good one passes


@pytest.mark.parametrize(
    "swept",
    [
        ["env=lunar_lander,cartpole"],
        ["algo=ppo,a2c", "env=lunar_lander,cartpole"],
        ["experiment=gamma_sweep,reinforce_cartpole"],
    ],
)
def test_an_adastop_sweep_over_envs_is_refused(swept: list[str]) -> None:
    # its test compared LunarLander's returns with CartPole's ("env=lunar_lander vs env=cartpole: continue")
    with pytest.raises(
        ConfigError, match=r"its jobs train on 2 envs \((lunar_lander, cartpole|cartpole, lunar_lander)\)"
    ):
        check_command(["--multirun", *swept, "hydra/sweeper=adastop"])


def test_a_design_too_small_to_decide_anything_is_known_as_such() -> None:
    assert not SequentialTest([["a"], ["b"]], 2, 1, 0.05, 10000).can_decide()  # 1/6 > 0.05
    assert not SequentialTest([["a"], ["b"]], 2, 2, 0.01, 10000).can_decide()  # 1/36 > 0.01 at the second interim
    assert SequentialTest([["a"], ["b"]], 2, 2, 0.05, 10000).can_decide()  # 1/36 <= 0.05 at the second interim
    scores = draw([0.0, 50.0], 2, 1)  # a difference no test could miss: still undecided, as said
    test = by_lander(scores, 2, 1)
    assert test.record("finished")["decisions"][0]["decision"] == "undecided"


@pytest.mark.parametrize(
    "text",
    ['{"decisions": [], "scores": {"a": ["x"]}}', '{"decisions": ["x"], "scores": {}}', '{"decisions": []}', "[1"],
)
def test_a_record_not_of_the_written_shape_is_left_out(tmp_path, text: str) -> None:
    path = tmp_path / "adastop.json"
    path.write_text(text)
    assert read_record(path) is None
    path.write_text('{"decisions": [{"a": "x", "b": "y", "decision": "larger"}], "scores": {"x": [1.5], "y": [0]}}')
    assert read_record(path) is not None
