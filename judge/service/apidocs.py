"""``GET /docs``: the HTTP API reference, rendered on the server from the OpenAPI schema.

FastAPI's own pages load their scripts from a CDN, which an offline machine cannot reach and
the service's Content-Security-Policy forbids; this page is plain HTML (every text escaped by
the template engine) and needs no token: it describes the API, it shows no data.
``/openapi.json`` holds the machine-readable schema.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from judge.service.pages import env

router = APIRouter(include_in_schema=False)

METHODS = ("get", "post", "put", "patch", "delete")


def _schema_name(schema: dict[str, Any] | None) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_schema_name(schema.get('items'))}"
    return str(schema.get("type", ""))


def endpoints(openapi: dict[str, Any]) -> list[dict[str, Any]]:
    """Every operation of the schema, in path order, with what a caller needs to know."""
    out = []
    for path, item in sorted(openapi.get("paths", {}).items()):
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            body = ((op.get("requestBody") or {}).get("content") or {})
            media = next(iter(body), None)
            out.append({
                "method": method.upper(),
                "path": path,
                "summary": op.get("summary", ""),
                "description": op.get("description", ""),
                "tags": op.get("tags", []),
                "deprecated": bool(op.get("deprecated")),
                "parameters": [
                    {"name": p["name"], "in": p["in"], "required": bool(p.get("required")),
                     "type": _schema_name(p.get("schema")),
                     "description": p.get("description", "")}
                    for p in op.get("parameters", [])
                ],
                "body": f"{media}: {_schema_name(body[media].get('schema'))}" if media else "",
                "responses": sorted(op.get("responses", {})),
            })
    return out


@router.get("/docs", response_class=HTMLResponse)
def api_docs(request: Request) -> HTMLResponse:
    openapi = request.app.openapi()
    html = env.get_template("apidocs.html").render(
        user=None, csrf="", title=openapi.get("info", {}).get("title", "claim-judge"),
        version=openapi.get("info", {}).get("version", ""), endpoints=endpoints(openapi),
        schemas=sorted(openapi.get("components", {}).get("schemas", {})),
    )
    return HTMLResponse(html, headers={"Cache-Control": "no-store"})
