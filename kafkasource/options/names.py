"""Which option names a parser takes: a name it does not know is refused, the closest known one suggested, so a typo
never falls back to a default. The source's and the sink's parsers both check their maps here."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.errors import OptionError
from kafkasource.options.values import shown_value

# the settings passed on under a prefix: to librdkafka, to the schema registry's client, to the token provider
PASSED_ON = ("kafka.", "schema.registry.", sign_in.PREFIX)


def check_names(
    options: Iterable[str], known: Iterable[str], listing: str, accepted: Collection[str] = (), whose: str = ""
) -> None:
    """Refuse the first of `options` (lower-case names, as the parsers keep them) that is none of `known` (in any
    case), not under a prefix of PASSED_ON and not `accepted` (lower-case names taken without a meaning). The error
    reads "unknown option 'name'`whose`: did you mean X? `listing`", the suggestion only where a known name is close;
    the name is shown cut short, as every value in an error is."""
    spelled = {name.lower(): name for name in known}
    for name in options:
        if name.startswith(PASSED_ON) or name in spelled or name in accepted:
            continue
        close = difflib.get_close_matches(name, list(spelled), n=1, cutoff=0.75)
        hint = f"did you mean {spelled[close[0]]}? " if close else ""
        raise OptionError(f"unknown option {shown_value(name)}{whose}: {hint}{listing}")
