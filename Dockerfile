# The image `globaltables export kubernetes` names: one region per container (docs/beyond-one-machine.md).
# Build: docker build -t globaltables:0.1.0 .
FROM python:3.11-slim

WORKDIR /opt/globaltables
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir . \
    && useradd --system --uid 10001 --home-dir /data globaltables \
    && mkdir -p /data /results \
    && chown globaltables /data /results

USER 10001
EXPOSE 8000
# Every command is an argument to the CLI; the manifests pass `region --topology ... --name R --data-dir /data`
# (or `run --attach ...` for the workload Job). The secret comes from $GLOBALTABLES_SECRET, never an argument.
ENTRYPOINT ["globaltables"]
CMD ["region", "--name", "us-east-1", "--host", "0.0.0.0", "--port", "8000", "--data-dir", "/data"]
