vcl 4.1;

# Varnish in front of vitrine: caches what vitrine's Cache-Control allows
# (Varnish's built-in rules do the rest), indexes each object under the tags
# of its xkey header, and answers vitrine's purges. Needs the xkey vmod
# (Debian: varnish-modules).
import xkey;

backend vitrine {
    .host = "127.0.0.1";
    .port = "8080";
}

# The addresses vitrine purges from; every other PURGE is refused.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "No xkey-purge header"));
        }
        # A hard purge: an image deleted for a takedown must not be served
        # from grace. 200 even when nothing carried the tags, so that the
        # purge is not retried.
        set req.http.n-gone = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Invalidated " + req.http.n-gone + " objects"));
    }
}

sub vcl_deliver {
    # The tags are for caches, not for clients.
    unset resp.http.xkey;
    unset resp.http.Surrogate-Key;
    unset resp.http.Cache-Tag;
}
