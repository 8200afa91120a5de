#!/usr/bin/env python3
"""A real RTSP server for the live-source tests (gst-rtsp-server through GObject introspection).

    rtsp_server.py PORT

Serves rtsp://127.0.0.1:PORT/live: live 160x120 noise at 25 fps (noise, so that an output grows
quickly; small, so that a processing under ThreadSanitizer keeps up; not slower, because the
client's probing of the stream reads about 20 pictures, in which no byte counts as progress
towards input.timeout) as Motion JPEG over RTP (every picture a keyframe, so a client that
reconnects decodes at once). Prints "ready" on stdout once it listens; runs until killed. Needs Debian's gir1.2-gst-rtsp-server-1.0, python3-gi and
gstreamer1.0-plugins-good (jpegenc, rtpjpegpay).
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: rtsp_server.py PORT", file=sys.stderr)
        return 2
    Gst.init(None)
    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(sys.argv[1])
    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        "( videotestsrc is-live=true pattern=snow ! video/x-raw,format=I420,width=160,height=120,framerate=25/1 "
        "! jpegenc quality=80 ! rtpjpegpay name=pay0 pt=26 )"
    )
    factory.set_shared(True)
    server.get_mount_points().add_factory("/live", factory)
    if server.attach(None) == 0:
        print(f"rtsp_server.py: cannot listen on port {sys.argv[1]}", file=sys.stderr)
        return 1
    print("ready", flush=True)
    GLib.MainLoop().run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
