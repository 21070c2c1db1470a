"""The embedded evaluator's web view: overview, trace list, trace page and labelling."""

from ragtrace_consumers.model import LabelSet
from ragtrace_consumers.webview.app import WebView, WebViewOptions
from ragtrace_consumers.webview.errors import BadRequest
from ragtrace_consumers.webview.sessions import Sessions

__all__ = ["BadRequest", "LabelSet", "Sessions", "WebView", "WebViewOptions"]
