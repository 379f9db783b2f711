"""A browser without scripts for the LTI tests: cookies per
host, redirects, forms posted as a browser posts them."""
from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import httpx
from bs4 import BeautifulSoup


class Browser:
    """A browser without scripts: cookies per host (Secure ones too: the servers are on loopback,
    as a browser treats it), redirects followed, forms read and posted as a browser posts them."""

    def __init__(self):
        self.client = httpx.Client(timeout=60, follow_redirects=False)
        self.jars: dict[str, dict[str, str]] = {}
        self.set_cookies: list[str] = []  # every Set-Cookie seen, as sent

    def request(self, method: str, url: str, **kwargs) -> httpx.Response:
        jar = self.jars.setdefault(urlsplit(url).netloc, {})
        headers = kwargs.pop("headers", {})
        if jar:
            headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in jar.items())
        if method == "POST":
            parts = urlsplit(url)
            headers.setdefault("Origin", f"{parts.scheme}://{parts.netloc}")
        answer = self.client.request(method, url, headers=headers, **kwargs)
        for cookie in answer.headers.get_list("set-cookie"):
            self.set_cookies.append(cookie)
            name, _, rest = cookie.partition("=")
            value = rest.split(";", 1)[0]
            if "max-age=0" in cookie.lower() or not value:
                jar.pop(name, None)
            else:
                jar[name] = value
        return answer

    def go(self, method: str, url: str, **kwargs) -> httpx.Response:
        """The request and its redirects; the last answer
        (its ``url`` says where the browser is)."""
        answer = self.request(method, url, **kwargs)
        while answer.status_code in (301, 302, 303, 307):
            method = "GET" if answer.status_code in (301, 302, 303) else method
            answer = self.request(method, urljoin(str(answer.url), answer.headers["location"]))
        return answer

    def form(self, page: httpx.Response, index: int = 0) -> tuple[str, dict[str, str]]:
        form = BeautifulSoup(page.text, "html.parser").find_all("form")[index]
        fields = {field["name"]: field.get("value", "") for field in form.find_all("input")
                  if field.get("name")}
        return urljoin(str(page.url), form["action"]), fields

    def submit(self, page: httpx.Response, index: int = 0, **changes) -> httpx.Response:
        action, fields = self.form(page, index)
        return self.go("POST", action, data={**fields, **changes})

    def session_cookie(self) -> bool:
        return any(cookie.startswith("autograder_session=") for cookie in self.set_cookies)
