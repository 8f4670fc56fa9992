"""CurveZMQ key files: written in the ZeroMQ certificate format, read back strictly."""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq

from groove.protocol.keys import CurveClient, KeyFileError, generate_key_pair, read_key_file, server_public_key


def test_a_generated_pair_reads_back_with_its_metadata(tmp_path: Path) -> None:
    public, secret = generate_key_pair(tmp_path, "dana", {"role": "curator", "orgs": "acme,initech"})
    mine = read_key_file(secret)
    theirs = read_key_file(public)
    assert theirs.public == mine.public
    assert theirs.secret is None
    assert mine.secret is not None
    assert theirs.metadata == {"role": "curator", "orgs": "acme,initech"}
    assert secret.stat().st_mode & 0o777 == 0o600
    assert zmq.curve_public(mine.secret) == mine.public  # the pair belongs together
    with pytest.raises(KeyFileError, match="exists already"):
        generate_key_pair(tmp_path, "dana", {})


def test_pyzmq_reads_our_files_and_we_read_its_files(tmp_path: Path) -> None:
    import zmq.auth

    public, secret = generate_key_pair(tmp_path, "ours", {"role": "agent"})
    assert zmq.auth.load_certificate(secret) == (read_key_file(public).public, read_key_file(secret).secret)
    theirs_public, theirs_secret = zmq.auth.create_certificates(tmp_path, "theirs")
    assert zmq.auth.load_certificate(theirs_secret) == (
        read_key_file(Path(theirs_public)).public,
        read_key_file(Path(theirs_secret)).secret,
    )


def test_a_client_loads_the_server_key_from_a_file_or_its_text(tmp_path: Path) -> None:
    server_public, _ = generate_key_pair(tmp_path, "server", {})
    _, client_secret = generate_key_pair(tmp_path, "client", {"role": "agent"})
    text = read_key_file(server_public).public.decode()
    assert server_public_key(text) == server_public_key(str(server_public)) == text.encode()
    curve = CurveClient.load(str(server_public), client_secret)
    assert curve.server_public == text.encode()
    with pytest.raises(KeyFileError, match="no secret key"):
        CurveClient.load(text, tmp_path / "client.key")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no public-key"),
        ('curve\n    public-key = "short"\n', "no public-key of 40"),
        ('curve\n    public-key = "' + "~" * 40 + '"\n', "not valid Z85"),
        ('    public-key = "x"\n', "indented under a section"),
        ("curve\n    public-key: nope\n", "line 2"),
    ],
)
def test_broken_key_files_are_refused_with_the_reason(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.key"
    path.write_text(content)
    with pytest.raises(KeyFileError, match=message):
        read_key_file(path)


def test_missing_file_and_bad_names(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="cannot read key file"):
        read_key_file(tmp_path / "none.key")
    with pytest.raises(KeyFileError, match="key name"):
        generate_key_pair(tmp_path, "../escape", {})
    with pytest.raises(KeyFileError, match="metadata"):
        generate_key_pair(tmp_path, "ok", {"role": 'say "hi"'})
