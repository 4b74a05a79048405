"""Long replies are split between lines so that every piece fits one Telegram message."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.telegram.context import chunks


def test_short_text_is_one_piece():
    assert chunks("a\nb") == ["a\nb"]


def test_pieces_are_cut_between_lines():
    lines = [f"Row {n}, quantity: is empty" for n in range(2, 400)]
    pieces = chunks("\n".join(lines), limit=1000)
    assert all(len(p) <= 1000 for p in pieces) and len(pieces) > 1
    assert "\n".join(pieces).splitlines() == lines  # nothing lost, nothing cut mid-line


@given(
    st.text(alphabet=st.sampled_from("ab \n"), max_size=400), st.integers(min_value=5, max_value=50)
)
def test_every_piece_fits_and_no_character_is_lost(text, limit):
    pieces = chunks(text, limit)
    assert all(0 < len(p) <= limit for p in pieces)
    assert "".join(pieces).replace("\n", "") == "".join(text.splitlines())
