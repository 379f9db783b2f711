# @title Submit helper: run this cell once (the Submit cell at the end of the lab uses it)
# Standard library only. submit() sends this notebook to your course's grading service and prints
# your score per part and the feedback here. It runs only when you run the Submit cell: never while
# grading.
class _Submitter:
    # the course's grading service, built into the notebook (none: hand the file in instead)
    server = ""
    lab = ""
    token_variable = "AUTOGRADER_TOKEN"  # an environment variable that may hold your token
    hand_in = (
        "This course has no grading service to submit to from here: hand in the notebook file "
        "itself. In Colab: File → Download → Download .ipynb. In Jupyter or VS Code: save it "
        "(Ctrl+S) and take the .ipynb file. Then upload it where your instructor asked you to."
    )

    def __init__(self):
        self.token, self.last_run, self.last = None, 0.0, None
        try:
            # IPython's, in every notebook kernel
            events = get_ipython().events  # type: ignore[name-defined]  # noqa: F821
            for callback in list(events.callbacks["post_run_cell"]):
                if type(getattr(callback, "__self__", None)).__name__ == "_Submitter":
                    events.unregister("post_run_cell", callback)  # this cell was run before
            events.register("post_run_cell", self._ran)
        except Exception:
            pass

    def _ran(self, *_):
        import time

        self.last_run = time.time()

    # -- the notebook as it is now ---------------------------------------------------------------
    def _colab(self):
        try:
            from google.colab import _message
        except ImportError:
            return None
        import json

        reply = _message.blocking_request("get_ipynb", request="", timeout_sec=120)
        notebook = reply.get("ipynb") if isinstance(reply, dict) else None
        if not isinstance(notebook, dict):
            raise RuntimeError(
                "Colab did not hand over the notebook: save it (File → Save), wait a moment, and "
                "run this cell again."
            )
        return (
            json.dumps(notebook).encode("utf-8"),
            f"{self.lab or 'notebook'}.ipynb",
            "this notebook as it is now in Colab",
        )

    def _path(self):
        import glob
        import json
        import os

        try:
            names = get_ipython().user_ns  # type: ignore[name-defined]  # noqa: F821
        except NameError:
            names = {}
        for candidate in (
            names.get("__vsc_ipynb_file__"),
            names.get("__session__"),
            os.environ.get("JPY_SESSION_NAME"),
        ):
            if candidate and str(candidate).endswith(".ipynb") and os.path.isfile(candidate):
                return str(candidate)
        mine = []  # the notebooks of this lab in the folder
        for path in sorted(glob.glob("*.ipynb")):
            try:
                with open(path, encoding="utf-8") as handle:
                    notebook = json.load(handle)
            except (OSError, ValueError):
                continue
            metadata = notebook.get("metadata", {}) if isinstance(notebook, dict) else {}
            if isinstance(metadata, dict) and any(
                isinstance(value, dict) and value.get("lab") == self.lab
                for value in metadata.values()
            ):
                mine.append((path, notebook))
        if len(mine) == 1:
            return mine[0][0]
        if not mine:
            raise RuntimeError(
                "the file of this notebook was not found: save it (Ctrl+S) in the folder Jupyter "
                "started in, or upload it on the service's web page."
            )
        return self._which(mine, names)

    def _which(self, mine, names):
        """Of several notebooks of this lab, the one whose code is what this kernel ran; when the
        code does not tell (copies alike), the student is asked, and without a way to ask nothing
        is sent: never the newest file by guess."""
        ran = {str(code).strip() for code in names.get("In", []) if str(code).strip()}

        def sources(notebook):
            cells = notebook.get("cells", []) if isinstance(notebook, dict) else []
            return {
                "".join(cell.get("source", "")).strip()
                for cell in cells
                if isinstance(cell, dict) and cell.get("cell_type") == "code"
            }

        shared = set.intersection(*(sources(notebook) for _, notebook in mine))
        told = {path: len((ran - shared) & sources(notebook)) for path, notebook in mine}
        best = max(told.values())
        if best and list(told.values()).count(best) == 1:
            return next(path for path, count in told.items() if count == best)
        paths = [path for path, _ in mine]
        listed = ", ".join(paths)
        try:
            answer = input(
                f"Several notebooks of this lab are in this folder ({listed}) and the code this "
                "kernel ran does not tell which one is this notebook: type its file name: "
            ).strip()
        except Exception:  # no way to ask (run headless): send nothing rather than a guess
            answer = ""
        if answer in paths:
            return answer
        raise RuntimeError(
            f"not sent: several notebooks of this lab are in this folder ({listed}) and this one "
            "could not be told apart. Run submit(file=\"NAME.ipynb\") naming this notebook's file, "
            "or upload it on the service's web page."
        )

    def _saved(self, file=None):
        import os
        import time

        path = file or self._path()
        with open(path, "rb") as handle:
            data = handle.read()
        saved = os.path.getmtime(path)
        if self.last_run and saved < self.last_run - 1:
            print(
                f"⚠️  The saved file {os.path.basename(path)} is older than the last cell you ran "
                f"(saved {time.strftime('%H:%M:%S', time.localtime(saved))}, last run "
                f"{time.strftime('%H:%M:%S', time.localtime(self.last_run))}): what is sent is the "
                "saved file.\n    To send your latest work, save the notebook (Ctrl+S / ⌘+S) and "
                "run this cell again."
            )
        return data, os.path.basename(path), f"the saved file {os.path.basename(path)}"

    # -- the service ------------------------------------------------------------------------------
    def _call(self, method, path, body=None, content_type=None, token=None, timeout=60):
        """(HTTP status, JSON answer or {}, headers)."""
        import json
        import urllib.error
        import urllib.request

        headers = {"Accept": "application/json", "User-Agent": "autograder-submit-cell"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(
            self.server.rstrip("/") + path, data=body, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                status, text, answer_headers = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as failed:
            status, text, answer_headers = failed.code, failed.read(), failed.headers
        try:
            data = json.loads(text.decode("utf-8")) if text else {}
        except ValueError:
            data = {}
        return status, data if isinstance(data, (dict, list)) else {}, answer_headers

    def _token(self):
        import getpass
        import os

        token = os.environ.get(self.token_variable, "").strip() or self.token
        if not token:
            token = getpass.getpass(
                "Your personal token for the grading service (from your instructor's message): "
            ).strip()
        return token

    @staticmethod
    def _form(name, data):
        import uuid

        boundary = uuid.uuid4().hex
        safe = "".join(ch for ch in name if ch.isprintable() and ch not in '"\\').encode("utf-8")
        body = (
            f"--{boundary}\r\n".encode()
            + b'Content-Disposition: form-data; name="notebook"; filename="'
            + safe
            + b'"\r\nContent-Type: application/x-ipynb+json\r\n\r\n'
            + data
            + f"\r\n--{boundary}--\r\n".encode()
        )
        return body, f"multipart/form-data; boundary={boundary}"

    def submit(self, wait_seconds=900, file=None):
        """Hand this notebook in to the grading service, wait for its result, and print it
        (``file``: this notebook's file, when the folder holds several of this lab)."""
        import time
        import urllib.error

        if not self.server:
            print(self.hand_in)
            return
        try:
            found = self._colab() or self._saved(file)
            data, name, what = found
            status, health, _ = self._call("GET", "/health", timeout=20)
            limit = health.get("max_upload_bytes") if isinstance(health, dict) else None
            if limit and len(data) > limit:
                print(
                    f"❌ This notebook is {len(data) / 1e6:.1f} MB, more than the service takes "
                    f"({limit / 1e6:.0f} MB): clear its outputs (Edit → Clear all outputs), save, "
                    "and run this cell again."
                )
                return
            token = self._token()
            print(f"📤 Sending {what} ({len(data) / 1024:.0f} KB) to {self.server} ...", flush=True)
            body, content_type = self._form(name, data)
            status, answer, headers = self._call(
                "POST", "/api/v1/submissions", body, content_type, token
            )
        except urllib.error.URLError as failed:
            print(
                f"❌ The grading service at {self.server} cannot be reached "
                f"({getattr(failed, 'reason', failed)}). Check your internet connection and run "
                "this cell again; if it still fails, hand in the file as your instructor said (in "
                "Colab: File → Download → Download .ipynb)."
            )
            return
        except (RuntimeError, OSError) as failed:
            print(f"❌ {failed}")
            return
        detail = answer.get("detail", "") if isinstance(answer, dict) else ""
        if status == 401:
            self.token = None
            print(
                "❌ Your token was not accepted: copy it again from your instructor's message (it "
                "is case-sensitive) and run this cell again."
            )
            return
        if status != 202:
            wait = headers.get("Retry-After") if headers else None
            print(f"❌ Not submitted: {detail or f'the service answered {status}'}"
                  + (f"\n   You can try again in {wait} s." if wait and status == 429 else ""))
            return
        self.token = token
        number, url = answer["id"], answer.get("url", "")
        print(
            f"✅ Received as submission {number} ({answer.get('lab')})"
            + (", marked late" if answer.get("late") else "")
            + ". Waiting for the grader...",
            flush=True,
        )
        started, said = time.monotonic(), None
        while time.monotonic() - started < wait_seconds:
            time.sleep(1 if time.monotonic() - started < 20 else 3)
            try:
                status, result, _ = self._call(
                    "GET", f"/api/v1/submissions/{number}", token=token, timeout=30
                )
            except (urllib.error.URLError, OSError):
                continue  # a passing network hiccup: ask again
            if status != 200:
                continue
            state = result.get("status")
            ahead = max(0, (result.get("position") or 1) - 1)
            news = (
                "⚙️  being graded"
                if state == "grading"
                else None
                if state != "queued"
                else "⏳ next in line"
                if not ahead
                else f"⏳ waiting: {ahead} submission{'s' if ahead > 1 else ''} ahead of yours"
            )
            if news and news != said:
                print(news, flush=True)
                said = news
            if state in ("graded", "error"):
                self.last = result
                self._show(result, url)
                return
        print(
            f"⏳ Still waiting after {wait_seconds / 60:.0f} minutes: your submission is safe in "
            f"the queue. See its result later at {url} (sign in with your token)."
        )

    @staticmethod
    def _show(result, url):
        if result.get("status") != "graded":
            print(f"❌ Your notebook could not be graded: {result.get('error')}")
        else:
            print(f"\nScore: {result['score']:g} / {result['max_score']:g}\n")
            for part in result.get("feedback", []):
                mark = "✅" if part["score"] >= part["max_score"] else "❌"
                print(
                    f"{mark} {part['part']}: {part['score']:g} / {part['max_score']:g}"
                    + (
                        f"  {part['message']}"
                        if part.get("message") and part["score"] < part["max_score"]
                        else ""
                    )
                )
                if part.get("visible_check") and part["score"] < part["max_score"]:
                    print(
                        "     your notebook's own check said: "
                        + part["visible_check"].replace("\n", "\n     ")
                    )
            for cell in result.get("cells", []):
                print(
                    f"⚠️  {cell['cell']} ({cell['kind']}) did not run: {cell['status']} "
                    f"{cell['error']}".rstrip()
                )
        if url:
            print(f"\nThe full feedback and all your attempts: {url} (sign in with your token)")


submit = _Submitter().submit
