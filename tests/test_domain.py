import numpy as np
import pytest

from margsynth import Attribute, Domain, Hierarchy


def test_domain_basics():
    d = Domain.from_sizes({"a": 2, "b": 3, "c": 4}, ordinal=["c"])
    assert d.names == ("a", "b", "c") and d.shape == (2, 3, 4)
    assert d.size() == 24 and d.size(["b", "c"]) == 12 and d.size([]) == 1
    assert d.project(["c", "a"]).names == ("c", "a")
    assert d["c"].ordinal and not d["a"].ordinal
    assert d.canonical(["c", "a"]) == ("a", "c")
    assert d.marginalize(["b"]).names == ("a", "c")
    assert hash(d) == hash(Domain.from_sizes({"a": 2, "b": 3, "c": 4}, ordinal=["c"]))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Domain.from_sizes({"a": 0}), "positive integer"),
        (lambda: Domain.from_sizes({"a": 2.5}), "positive integer"),
        (lambda: Domain((Attribute("a", 2), Attribute("a", 3))), "duplicate"),
        (lambda: Domain.from_sizes({"a": 2}, ordinal=["z"]), "not in domain"),
        (lambda: Domain.from_sizes({"a": 2}).project(["q"]), "unknown attribute"),
        (lambda: Domain.from_sizes({"a": 2}).project(["a", "a"]), "repeat"),
        (lambda: Attribute("a", 3, labels=("x", "y")), "labels"),
        (lambda: Attribute("a", 3, hierarchy=Hierarchy.flat(4)), "leaves"),
    ],
)
def test_domain_validation(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_domain_from_json(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"x": 3, "y": 2}')
    assert Domain.from_json(p).shape == (3, 2)
    p.write_text('{"x": -1}')
    with pytest.raises(ValueError, match="'x'"):
        Domain.from_json(p)
    p.write_text("not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        Domain.from_json(p)


def test_attribute_to_dict_round_trip_and_errors():
    attrs = [
        Attribute("a", 6, ordinal=True, hierarchy=Hierarchy.from_groups([0, 0, 1, 1, 2, 2]), labels=tuple("uvwxyz")),
        Attribute("b", 3, labels=("p", "q", "r")),
        Attribute("c", 2),
    ]
    for a in attrs:
        d = a.to_dict()
        assert list(d)[:3] == ["name", "size", "ordinal"]
        back = Attribute.from_dict(d)
        assert back == a and back.labels == a.labels
    assert attrs[0].to_dict()["hierarchy"] == [[0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 2], [0] * 6]
    assert "hierarchy" not in attrs[2].to_dict() and "labels" not in attrs[2].to_dict()
    for bad, match in [
        ([1], "an attribute is an object"),
        ({"size": 2, "ordinal": False}, "field 'name' is missing"),
        ({"name": "x", "size": True, "ordinal": False}, "field 'size': True is not an integer"),
        ({"name": "x", "size": 2, "ordinal": 1}, "field 'ordinal': 1 is not a boolean"),
        ({"name": "x", "size": 2, "ordinal": False, "labels": [1, 2]}, "field 'labels'"),
        ({"name": "x", "size": 2, "ordinal": False, "hierarchy": [[0, 1]]}, "field 'hierarchy': hierarchy needs"),
        ({"name": "x", "size": 2, "ordinal": False, "hierarchy": 3}, "field 'hierarchy'"),
        ({"name": "x", "size": 2, "ordinal": False, "labels": ["p"]}, "1 labels for 2 values"),
    ]:
        with pytest.raises(ValueError, match=match):
            Attribute.from_dict(bad)


def test_hierarchy():
    h = Hierarchy.from_groups([0, 0, 1, 1, 1])
    assert h.height == 2 and h.n_groups(1) == 2 and h.n_groups(2) == 1
    lca = h.lca_level(0)
    assert lca[0, 0] == 0 and lca[0, 1] == 1 and lca[0, 2] == 2 and lca[2, 4] == 1
    np.testing.assert_array_equal(lca, lca.T)
    assert Hierarchy.flat(3).lca_level(0)[0, 1] == 1
    with pytest.raises(ValueError, match="nest"):
        Hierarchy(((0, 1, 2, 3), (0, 0, 1, 1), (0, 1, 1, 0), (0, 0, 0, 0)))
    with pytest.raises(ValueError, match="single root"):
        Hierarchy(((0, 1), (0, 1)))
    with pytest.raises(ValueError, match="levels 0..2"):
        h.groups(3)
