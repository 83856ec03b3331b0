"""The kafka.* options: librdkafka's settings, and which ones kafkasource refuses.

Every kafka.* option but kafka.bootstrap.servers goes to librdkafka with the prefix stripped. Settings the
source sets itself, and the Java client's settings librdkafka does not know, are refused with what to write
instead; librdkafka checks the rest itself, and its complaint becomes an error naming the option, never a
secret.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping

from kafkasource.cluster.known_settings import SETTINGS
from kafkasource.cluster.sign_in import librdkafka as sign_in_settings
from kafkasource.errors import OptionError
from kafkasource.runtime.secrets import is_secret, masked

# Kafka settings we manage ourselves, or Java-client settings librdkafka does not know, with what to do instead.
UNSUPPORTED_KAFKA_SETTINGS = {
    "key.deserializer": "keys are always returned as binary; decode them in Spark (CAST, from_json, from_avro)",
    "value.deserializer": "values are always returned as binary; decode them in Spark (CAST, from_json, from_avro)",
    "sasl.jaas.config": "librdkafka takes credentials as kafka.sasl.username and kafka.sasl.password "
    "(with kafka.sasl.mechanism and kafka.security.protocol)",
    "ssl.truststore.location": "give the CA certificate in PEM form as kafka.ssl.ca.location",
    "ssl.truststore.password": "give the CA certificate in PEM form as kafka.ssl.ca.location (no password needed)",
    "ssl.truststore.type": "give the CA certificate in PEM form as kafka.ssl.ca.location",
    "ssl.keystore.type": "give a PKCS#12 keystore as kafka.ssl.keystore.location, or PEM files as "
    "kafka.ssl.certificate.location and kafka.ssl.key.location",
    "interceptor.classes": "Java interceptors cannot run in librdkafka; remove the option",
    "sasl.login.callback.handler.class": "use the option oauthProvider (a token provider: aws_msk_iam, azure, gcp "
    "or module:function), or librdkafka's kafka.sasl.oauthbearer.* settings",
    "sasl.client.callback.handler.class": "use the option oauthProvider (a token provider: aws_msk_iam, azure, gcp "
    "or module:function), or librdkafka's kafka.sasl.oauthbearer.* settings",
    "max.poll.records": "use maxOffsetsPerTrigger to bound a micro-batch",
    "session.timeout.ms": "executor consumers never join a group; remove the option",
}
# The group.id of kafkasource's own consumers where the query names no group: librdkafka's consumer needs one even
# to only assign() partitions. Those consumers never join it and never commit to it, so no tool attributes them to
# a group of the user's.
NEVER_COMMITTING_GROUP_ID = "kafkasource-executor-never-commits"
# set by the source itself on every client it creates
MANAGED_KAFKA_SETTINGS = {
    "group.id",
    "auto.offset.reset",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "enable.partition.eof",
    "bootstrap.servers",
}


def one_line(text: str) -> str:
    """librdkafka's complaint as one line: it quotes a refused value as given, line breaks included (a value
    of "0\\n"), and ends some complaints with a line break; shown escaped, a refusal never breaks in two."""
    return text.strip().replace("\r", "\\r").replace("\n", "\\n")


def kafka_config(options: Mapping[str, str]) -> dict[str, str]:
    """The kafka.* options (names in lower case) as librdkafka settings, prefix stripped; refused with a clear
    error where kafkasource sets the setting itself, where it is the Java client's, or where librdkafka refuses it."""
    config = {}
    for name, value in options.items():
        name = name.lower()
        if not name.startswith("kafka.") or name == "kafka.bootstrap.servers":
            continue
        setting = name[len("kafka.") :]
        if "\x00" in setting or "\x00" in str(value):  # librdkafka's C strings would silently end there
            raise OptionError(f"option kafka.{repr(setting)[1:-1][:80]} holds a NUL character (\\x00); remove it")
        if sign_in_settings.java_msk_setting(setting, str(value)):
            raise OptionError(f"option kafka.{setting} is the Java client's: {sign_in_settings.MSK_ADVICE}")
        if setting in UNSUPPORTED_KAFKA_SETTINGS:
            raise OptionError(
                f"option kafka.{setting} is a Java client setting that librdkafka does not "
                f"support: {UNSUPPORTED_KAFKA_SETTINGS[setting]}"
            )
        if setting in ("group.id", "auto.offset.reset"):
            continue  # read into typed fields
        if setting == "enable.auto.commit":
            if str(value).strip().lower() != "false":
                raise OptionError(
                    "option kafka.enable.auto.commit cannot be true: this source commits the group's "
                    "offsets itself when a batch completes; use commitMode (sync, async or none)"
                )
            continue
        if setting in MANAGED_KAFKA_SETTINGS:
            raise OptionError(f"option kafka.{setting} is managed by the source; remove it")
        config[setting] = str(value)
    config = sign_in_settings.with_provider_settings(config, options)
    _check_librdkafka_accepts(config)
    return config


def _check_librdkafka_accepts(config: Mapping[str, str]) -> None:
    """librdkafka itself validates names and values; turn its complaint into an error naming the option.

    A setting librdkafka does not know never has its value shown: a misspelled secret setting
    (kafka.sasl.pasword) is not caught by the secret markers, and a typo is when a secret most likely sits
    under a wrong name."""
    from confluent_kafka import Consumer, KafkaException

    try:
        # a client that is closed at once; it never subscribes, assigns or commits
        Consumer({**config, "group.id": "kafkasource-option-check", "log_level": 0}).close()
    except (KafkaException, ValueError, TypeError) as exc:  # ValueError: a NUL character in a name or value
        message = str(exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else exc).strip()
        quoted = re.search(r'property:? "([^"]+)"', message)
        mentioned = sorted((n for n in config if n in message), key=len, reverse=True)
        name = quoted.group(1) if quoted and quoted.group(1) in config else next(iter(mentioned), None)
        unknown = "No such configuration property" in message
        # the refused name itself may hold what looks like its value (a value of "sasl" for kafka.sasl.pasword)
        misnamed = [config[name]] if unknown and name is not None and config[name] not in name else []
        message = one_line(masked(message, config, also=misnamed))
        if name is None:
            raise OptionError(f"librdkafka rejected a kafka.* setting: {message}. {_LIBRDKAFKA_NAMES}") from None
        shown = f"kafka.{name}" + ("" if is_secret(name) or unknown else f"={config[name]!r}")
        hint = ""
        if unknown:
            close = difflib.get_close_matches(name, _SUGGESTED_SETTINGS, n=1, cutoff=0.75)
            hint = f" Did you mean kafka.{close[0]}?" if close else ""
        raise OptionError(f"librdkafka rejected {shown}: {message}.{hint} {_LIBRDKAFKA_NAMES}") from None


# the names a misspelled kafka.* setting may be meant as: what librdkafka takes and kafkasource lets through
_SUGGESTED_SETTINGS = sorted(SETTINGS - set(UNSUPPORTED_KAFKA_SETTINGS) - MANAGED_KAFKA_SETTINGS)
_LIBRDKAFKA_NAMES = (
    "Options prefixed with kafka. are passed to librdkafka; see its CONFIGURATION.md for the names it accepts"
)
