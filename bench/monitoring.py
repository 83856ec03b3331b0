"""The dashboard picture of the docs' Monitoring page, from a real run: the ingest job under spark-submit with
[metrics] on, a producer writing in bursts, the exporter scraped every second; the panels of
conf/grafana-dashboard.json plotted from those scrapes (matplotlib, the bench extra) into docs/img/monitoring.png.

    python3 -m bench.monitoring [--seconds 60] [--out docs/img/monitoring.png]

The run: a local broker, a 4-partition topic with 10,000 records waiting; once the job's exporter answers
(time 0), 100 records a second for `--seconds`, with a burst of 30,000 a third of the way in; scraping goes
on until the group's lag has been 0 for 15 s (at most 10 minutes). The job reads with processingTime=2s and
maxOffsetsPerTrigger=5000, so the backlogs drain over several batches.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from dev import broker as local_broker
from dev.process import free_port
from dev.submit import kill_group, start_job, write_config
from tests.support.metrics_helpers import parse  # the exposition read back by prometheus_client's parser

PARTITIONS = 4


def produce(bootstrap: str, topic: str, count: int, start: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(start, start + count):
        producer.produce(topic, value=b"x" * 100, key=str(i).encode(), partition=i % PARTITIONS)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", default=str(Path(__file__).parent.parent / "docs" / "img" / "monitoring.png"))
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    work = Path(tempfile.mkdtemp(prefix="kafkasource-monitoring-"))
    broker = local_broker.start()
    job = None
    try:
        bootstrap = broker.bootstrap_servers
        topic = "orders"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        while len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < PARTITIONS:
            time.sleep(0.1)
        produce(bootstrap, topic, 10_000, 0)
        port = free_port()
        config = write_config(work / "ingest.toml", bootstrap, topic, "orders-ingest", work,
                              trigger="processingTime=2s", extra_source="maxOffsetsPerTrigger = 5000")
        with open(config, "a") as f:
            f.write(f'[metrics]\nport = {port}\nbroker_interval = "2s"\n')
        job = start_job("ingest", "--config", str(config), log_path=work / "job.log")
        scrapes: list[tuple[float, dict]] = []
        stop = threading.Event()

        def trickle() -> None:
            sent, began = 10_000, time.monotonic()
            burst_done = False
            while not stop.is_set() and time.monotonic() - began < args.seconds:
                produce(bootstrap, topic, 100, sent)
                sent += 100
                if not burst_done and time.monotonic() - began > args.seconds / 3:
                    produce(bootstrap, topic, 30_000, sent)
                    sent += 30_000
                    burst_done = True
                stop.wait(1)

        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 600
        while scrape(url) is None:  # the job is still starting
            if job.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the job's exporter never answered; its log: {work / 'job.log'}")
            time.sleep(1)
        producer = threading.Thread(target=trickle, daemon=True)
        began = time.time()
        producer.start()
        caught_up_since = None
        while time.time() - began < 600:
            found = scrape(url)
            if found is not None:
                scrapes.append((time.time() - began, found))
                lag = found.get("kafkasource_group_lag_records", {})
                if time.time() - began > args.seconds and lag and not any(lag.values()):
                    caught_up_since = caught_up_since or time.time()
                    if time.time() - caught_up_since > 15:
                        break
                else:
                    caught_up_since = None
            time.sleep(1)
        stop.set()
        producer.join()
    finally:
        if job is not None:
            kill_group(job)
        broker.stop()
    plot(scrapes, args.out, plt)
    print(f"{len(scrapes)} scrapes over {scrapes[-1][0]:.0f} s plotted into {args.out}")
    return 0


def scrape(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return parse(answer.read().decode())
    except OSError:
        return None


def series(scrapes, name: str, key) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for at, metrics in scrapes:
        for labels, value in metrics.get(name, {}).items():
            xs, ys = out.setdefault(key(dict(labels)), ([], []))
            xs.append(at)
            ys.append(value)
    return out


def plot(scrapes, out: str, plt) -> None:
    partition = lambda labels: f"{labels['topic']}-{labels['partition']}"  # noqa: E731
    query = lambda labels: labels["query"]  # noqa: E731
    commits_rate = {}
    for name, (xs, ys) in series(scrapes, "kafkasource_commits_total", lambda labels: labels["group"]).items():
        # each value with the next: one pair fewer than scrapes
        pairs = zip(ys, ys[1:], xs, xs[1:], strict=False)
        commits_rate[name] = (xs[1:], [max(0.0, (b - a) / (t2 - t1)) for a, b, t1, t2 in pairs])
    panels = [
        ("Lag per partition (records)", series(scrapes, "kafkasource_partition_lag_records", partition)),
        ("Lag per partition (seconds)", series(scrapes, "kafkasource_partition_lag_seconds", partition)),
        ("Rows per second (last batch)", series(scrapes, "kafkasource_query_rows_per_second", query)),
        ("Batch duration (seconds)", series(scrapes, "kafkasource_query_batch_duration_seconds", query)),
        ("Group lag as the brokers see it (records)", series(scrapes, "kafkasource_group_lag_records", partition)),
        ("Commits per second", commits_rate),
    ]
    figure, axes = plt.subplots(3, 2, figsize=(12, 9), sharex=True)
    for ax, (title, lines) in zip(axes.flat, panels, strict=True):
        for label, (xs, ys) in sorted(lines.items()):
            ax.plot(xs, ys, label=label, linewidth=1.2)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if len(lines) > 1:
            ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("seconds into the run")
    figure.suptitle("kafkasource metrics, scraped every second from the ingest job "
                    "(conf/grafana-dashboard.json's panels)", fontsize=11)
    figure.tight_layout()
    figure.savefig(out, dpi=80)


if __name__ == "__main__":
    raise SystemExit(main())
