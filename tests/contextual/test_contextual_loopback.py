"""The real SDK, over real TCP, to a stand-in Messages API on 127.0.0.1 named by ANTHROPIC_BASE_URL."""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import network_guard

pytestmark = pytest.mark.extra("remote")


class StandInAPI(BaseHTTPRequestHandler):
    received: list[tuple[str, dict, dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        StandInAPI.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        chunk = body["messages"][0]["content"][1]["text"]
        reply = {
            "id": "msg_local", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": f"Wombatword context ({len(chunk)} characters asked about)."}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 7},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def local_api(monkeypatch):
    with network_guard.loopback_allowed():
        server = ThreadingHTTPServer(("127.0.0.1", 0), StandInAPI)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        StandInAPI.received = []
        monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-loopback")
        try:
            yield StandInAPI.received
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)


def test_index_asks_the_model_at_the_base_url_and_search_reports_its_contexts(make_tree, run, local_api):
    root = make_tree({"shop/cart.py": "def add_item(cart, item):\n    cart.append(item)\n",
                      "shop/pay.py": "def charge(card, amount):\n    return card.debit(amount)\n"})
    with network_guard.loopback_allowed():
        result = run("index", "--root", root, "--retriever", "lexical+ctx")
    assert result.exit_code == 0, result.output
    assert "2 chunks to contextualize with claude-haiku-5-5" in result.output
    assert "lexical+ctx: indexed 2 chunks" in result.output
    assert sorted(path for path, _, _ in local_api) == ["/v1/messages", "/v1/messages"]
    assert all(headers["authorization"] == "Bearer sk-loopback" for _, headers, _ in local_api)
    result = run("query", "--root", root, "--retriever", "lexical+ctx", "--json", "wombatword charge")
    hit = json.loads(result.output)["results"][0]
    assert hit["path"] == "shop/pay.py"
    assert hit["context"].startswith("Wombatword context")


def test_the_loopback_allowance_is_narrow():
    with network_guard.loopback_allowed():
        with pytest.raises(network_guard.NetworkAccessError):
            socket.create_connection(("192.0.2.1", 9), timeout=1)
        with pytest.raises(network_guard.NetworkAccessError):
            socket.getaddrinfo("example.com", 443)
    with pytest.raises(network_guard.NetworkAccessError):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    assert len(network_guard.ATTEMPTS) == 3
    network_guard.ATTEMPTS.clear()  # expected here
