// vitrine admin UI enhancements. Every page works without this file; it
// adds copy buttons, the playground's live preview, drag-and-drop
// uploads with progress, and BlurHash placeholders behind loading images.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function ready(fn) {
    if (document.readyState !== "loading") fn();
    else document.addEventListener("DOMContentLoaded", fn);
  }

  // The Menu button: on a narrow screen the stylesheet folds the
  // navigation behind it (it shows only with this file); Escape folds it
  // again.
  function setupMenu() {
    var btn = document.querySelector(".nav-toggle");
    if (!btn) return;
    var side = btn.closest(".side");
    var set = function (open) {
      side.classList.toggle("menu-open", open);
      btn.setAttribute("aria-expanded", String(open));
    };
    btn.addEventListener("click", function () { set(!side.classList.contains("menu-open")); });
    side.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && side.classList.contains("menu-open")) {
        set(false);
        btn.focus();
      }
    });
  }

  // Copy buttons: <button data-copy="input-id">.
  function setupCopy() {
    document.querySelectorAll("[data-copy]").forEach(function (btn) {
      btn.addEventListener("click", function () {
        var field = document.getElementById(btn.getAttribute("data-copy"));
        if (!field) return;
        var done = function () {
          var label = btn.textContent;
          btn.textContent = "Copied";
          btn.classList.add("copied");
          setTimeout(function () { btn.textContent = label; btn.classList.remove("copied"); }, 1600);
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(field.value).then(done, function () { field.select(); });
        } else {
          field.select();
          try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selected */ }
        }
      });
    });
  }

  // Playground: refresh the preview, query and signed URL as fields change.
  function setupPlayground() {
    var form = document.getElementById("playground");
    if (!form) return;
    var endpoint = form.getAttribute("data-preview");
    var img = document.getElementById("pg-preview");
    var box = img.parentElement;
    var err = document.getElementById("pg-error");
    var query = document.getElementById("pg-query");
    var signed = document.getElementById("pg-url");
    var before = document.getElementById("pg-before");
    var size = document.getElementById("pg-size");
    var timer = null, seq = 0;
    function refresh() {
      var data = new URLSearchParams(new FormData(form));
      data.delete("op");
      var mine = ++seq;
      box.classList.add("loading");
      fetch(endpoint + "?" + data.toString(), { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (p) {
          if (mine !== seq) return;
          query.value = p.query || "";
          signed.value = p.signedUrl || "";
          if (size) size.textContent = p.size || "—";
          if (before && p.before && before.getAttribute("src") !== p.before) {
            before.src = p.before;
            before.hidden = false;
          }
          if (p.error) {
            err.textContent = p.error;
            err.hidden = false;
            img.hidden = true;
            box.classList.remove("loading");
          } else {
            err.hidden = true;
            img.onload = function () { box.classList.remove("loading"); };
            img.src = p.preview;
            img.hidden = false;
          }
          var state = new URLSearchParams(data);
          history.replaceState(null, "", form.getAttribute("action") + "?" + state.toString());
        })
        .catch(function () { box.classList.remove("loading"); });
    }
    form.addEventListener("input", function (e) {
      if (e.target.name === "add" || e.target.name === "preset") return;
      clearTimeout(timer);
      timer = setTimeout(refresh, 350);
    });
    form.addEventListener("change", function (e) {
      if (e.target.tagName === "SELECT" && e.target.name !== "add" && e.target.name !== "preset") {
        clearTimeout(timer);
        refresh();
      }
    });
  }

  // Upload: drag and drop or the picker, many files at once, a progress bar
  // per file and in total. Files go with tus (tus-js-client, tus.min.js)
  // to the API's /users/<user>/uploads, resumable: paused and resumed by
  // hand, retried on a dropped connection from where they stopped. The page
  // first asks the UI for an upload token (POST upload/token) for the
  // batch; when the server takes no tus uploads or the key may not issue
  // tokens, each file is posted whole to the form's action, as before, and
  // the page says why. An image by URL is posted to the form's action.
  function setupUpload() {
    var form = document.getElementById("upload-form");
    if (!form) return;
    var zone = document.getElementById("dropzone");
    var input = document.getElementById("up-files");
    var urlField = document.getElementById("up-url");
    var list = document.getElementById("upload-list");
    var total = document.getElementById("upload-total");
    var totalBar = document.getElementById("upload-total-bar");
    var totalLabel = document.getElementById("upload-total-label");
    var modeNote = document.getElementById("upload-mode");
    var status = document.getElementById("upload-status");
    var PARALLEL = 3;
    var RETRIES = [0, 1000, 3000, 5000, 10000, 20000];
    // Every file of the page's batches: {size, sent, state}.
    var files = [], queue = [], running = 0, lastSaid = "";

    function el(tag, cls, text) {
      var e = document.createElement(tag);
      if (cls) e.className = cls;
      if (text !== undefined) e.textContent = text;
      return e;
    }
    function pct(a, b) { return b > 0 ? Math.floor(100 * a / b) : 100; }
    function mb(n) { return (n / 1048576).toFixed(n < 10485760 ? 1 : 0) + " MB"; }

    // The total: bytes of every file, those done or refused counted whole.
    function updateTotal() {
      var size = 0, sent = 0, done = 0, failed = 0, paused = 0;
      files.forEach(function (f) {
        size += f.size;
        sent += f.state === "done" || f.state === "error" ? f.size : Math.min(f.sent, f.size);
        if (f.state === "done") done++;
        if (f.state === "error") failed++;
        if (f.state === "paused") paused++;
      });
      var p = pct(sent, size);
      totalBar.value = p;
      totalBar.setAttribute("aria-valuetext", p + "%");
      var finished = done + failed === files.length;
      totalLabel.textContent = finished ? "Uploads finished" : "Uploading " + files.length + (files.length === 1 ? " file" : " files");
      // What screen readers hear: each file finished, each tenth of the
      // total, not every progress event.
      var said = done + " of " + files.length + " uploaded" + (failed ? ", " + failed + " refused" : "") +
        (paused ? ", " + paused + " paused" : "") + (finished ? "." : ", " + (Math.floor(p / 10) * 10) + "% sent.");
      if (said !== lastSaid) { status.textContent = said; lastSaid = said; }
      total.setAttribute("data-percent", String(p));
    }

    // One list item per file: name, progress, state, pause button.
    function item(name, size) {
      var li = el("li", "card upload-item");
      var label = el("span", "upload-name", name);
      var bar = el("progress");
      bar.max = 100; bar.value = 0;
      bar.setAttribute("aria-label", "Uploading " + name);
      var state = el("span", "upload-state", size ? "Waiting · " + mb(size) : "Fetching…");
      li.appendChild(label); li.appendChild(bar); li.appendChild(state);
      list.appendChild(li);
      return { li: li, name: label, bar: bar, state: state };
    }
    function showResult(v, res) {
      if (v.bar.parentNode) v.li.removeChild(v.bar);
      if (v.state.parentNode) v.li.removeChild(v.state);
      if (v.button && v.button.parentNode) v.li.removeChild(v.button);
      if (res && !res.error) {
        var thumb = el("img");
        thumb.src = res.thumb; thumb.alt = ""; thumb.width = 56; thumb.height = 56;
        v.li.insertBefore(thumb, v.name);
        var link = el("a", "mono", res.id);
        link.href = res.href;
        v.li.appendChild(link);
        v.li.appendChild(res.existed ? el("span", "badge", "Already existed") : el("span", "badge badge-ok", "Uploaded"));
        v.li.setAttribute("data-state", "done");
      } else {
        v.li.appendChild(el("span", "field-error", (res && res.error) || "Upload failed"));
        v.li.setAttribute("data-state", "error");
      }
    }
    function setProgress(f, sent) {
      f.sent = sent;
      var p = pct(sent, f.size);
      f.view.bar.value = p;
      f.view.bar.setAttribute("aria-valuetext", p + "%");
      f.view.state.textContent = (f.state === "paused" ? "Paused at " : "") + p + "% of " + mb(f.size);
      updateTotal();
    }
    function finish(f, res) {
      f.state = res && !res.error ? "done" : "error";
      showResult(f.view, res);
      updateTotal();
      running--;
      next();
    }

    // Whole-file posts to the form's action (format=json), the fallback.
    function postWhole(f, user) {
      var fd = new FormData();
      fd.append("csrf", form.elements.csrf.value);
      fd.append("user", user);
      fd.append("format", "json");
      fd.append("images", f.file, f.file.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action"));
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) setProgress(f, f.size * e.loaded / e.total);
      });
      xhr.addEventListener("load", function () {
        var res;
        try { res = JSON.parse(xhr.responseText)[0]; } catch (e) { res = { error: xhr.responseText || "Upload failed" }; }
        finish(f, res);
      });
      xhr.addEventListener("error", function () { finish(f, { error: "The connection failed." }); });
      f.state = "sending";
      xhr.send(fd);
    }

    // The API's message in a tus error: its JSON body or its
    // <prefix>-Error-Message header.
    function tusMessage(err) {
      var r = err && err.originalResponse;
      if (r) {
        try {
          var b = JSON.parse(r.getBody());
          if (b && b.error && b.error.message) return b.error.message;
        } catch (e) { /* not JSON */ }
        var x = r.getUnderlyingObject && r.getUnderlyingObject();
        var m = x && x.getAllResponseHeaders && /^x-[^:]*-error-message:\s*(.+)$/im.exec(x.getAllResponseHeaders());
        if (m) return m[1].trim();
        if (r.getBody()) return r.getBody();
        return "The server answered " + r.getStatus() + ".";
      }
      return "The connection failed and did not come back.";
    }
    // The image identifier of the final tus answer (X-<prefix>-ImageIdentifier).
    function tusIdentifier(resp) {
      var x = resp && resp.getUnderlyingObject && resp.getUnderlyingObject();
      var m = x && x.getAllResponseHeaders && /^x-[^:]*-imageidentifier:\s*(\S+)/im.exec(x.getAllResponseHeaders());
      return m ? m[1] : "";
    }
    // The result the no-JavaScript page shows for an uploaded image.
    // existed: the final answer was 200, not 201 (the user had the image).
    function lookUp(f, user, id, existed) {
      var q = new URLSearchParams({ user: user, uploaded: id, format: "json" });
      fetch(form.getAttribute("action") + "?" + q.toString(), { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.json(); })
        .then(function (rs) {
          if (rs && rs[0]) rs[0].existed = existed;
          finish(f, rs && rs[0] ? rs[0] : { error: "Uploaded as " + id + ", but the image is not listed." });
        },
          function () { finish(f, { error: "Uploaded as " + id + ", but its details could not be read." }); });
    }

    function sendTus(f, user, session) {
      var up = new window.tus.Upload(f.file, {
        endpoint: session.endpoint,
        retryDelays: RETRIES,
        headers: { "Authorization": "Bearer " + session.token },
        metadata: { filename: f.file.name, filetype: f.file.type || "application/octet-stream" },
        storeFingerprintForResuming: false,
        onProgress: function (sent) { if (f.state === "sending") setProgress(f, sent); },
        // A resumed file asks the server first (HEAD) how much it has.
        onAfterResponse: function (req, res) {
          if (req.getMethod() === "HEAD" && res.getHeader("Upload-Offset")) {
            f.view.li.setAttribute("data-resumed-from", res.getHeader("Upload-Offset"));
          }
        },
        onError: function (err) { finish(f, { error: tusMessage(err) }); },
        onSuccess: function (payload) {
          setProgress(f, f.size);
          var last = payload && payload.lastResponse;
          var id = tusIdentifier(last);
          if (!id) { finish(f, { error: "The upload finished but the server named no image." }); return; }
          f.view.state.textContent = "Processing…";
          lookUp(f, user, id, last.getStatus() === 200);
        }
      });
      f.upload = up;
      var btn = el("button", "btn", "Pause");
      btn.type = "button";
      btn.setAttribute("aria-label", "Pause " + f.file.name);
      btn.addEventListener("click", function () {
        if (f.state === "sending") {
          f.state = "paused";
          up.abort(false);
          btn.textContent = "Resume";
          btn.setAttribute("aria-label", "Resume " + f.file.name);
          f.view.li.setAttribute("data-state", "paused");
          setProgress(f, f.sent);
        } else if (f.state === "paused") {
          f.state = "sending";
          f.resumes = (f.resumes || 0) + 1;
          up.start();
          btn.textContent = "Pause";
          btn.setAttribute("aria-label", "Pause " + f.file.name);
          f.view.li.setAttribute("data-state", "sending");
          setProgress(f, f.sent);
        }
      });
      f.view.button = btn;
      f.view.li.appendChild(btn);
      f.state = "sending";
      f.view.li.setAttribute("data-state", "sending");
      up.start();
    }

    // next starts queued files while fewer than PARALLEL are running; a
    // paused file counts as running (it holds its place).
    function next() {
      while (running < PARALLEL && queue.length) {
        var job = queue.shift();
        running++;
        job();
      }
    }

    function uploadAll(picked) {
      if (!form.elements.user.reportValidity()) return false;
      var user = form.elements.user.value.trim();
      var batch = Array.prototype.map.call(picked, function (file) {
        var f = { file: file, size: file.size || 1, sent: 0, state: "waiting" };
        f.view = item(file.name, file.size);
        files.push(f);
        return f;
      });
      total.hidden = false;
      updateTotal();
      var body = new URLSearchParams({ csrf: form.elements.csrf.value, user: user, files: String(batch.length) });
      var tusOK = window.tus && window.tus.isSupported;
      var ask = tusOK ? fetch(form.getAttribute("data-token"), { method: "POST", body: body, credentials: "same-origin",
        headers: { "Accept": "application/json" } }).then(function (r) { return r.json(); })
        : Promise.resolve({ fallback: "This browser cannot resume uploads; each file is sent whole." });
      ask.then(function (s) {
        if (s.error) {
          batch.forEach(function (f) { f.state = "error"; showResult(f.view, { error: s.error }); });
          updateTotal();
          return;
        }
        modeNote.textContent = s.token ? "Resumable: paused or interrupted files continue where they stopped." : s.fallback;
        total.setAttribute("data-mode", s.token ? "tus" : "whole");
        batch.forEach(function (f) {
          queue.push(function () { if (s.token) sendTus(f, user, s); else postWhole(f, user); });
        });
        next();
      }, function () {
        modeNote.textContent = "The server did not answer; each file is sent whole.";
        total.setAttribute("data-mode", "whole");
        batch.forEach(function (f) { queue.push(function () { postWhole(f, user); }); });
        next();
      });
      return true;
    }

    // An image by URL: the server fetches it; the list says what came of it.
    function uploadURL() {
      if (!form.elements.user.reportValidity() || !urlField.reportValidity()) return;
      var source = urlField.value.trim();
      if (!source) { urlField.focus(); return; }
      var v = item(source, 0);
      v.li.removeChild(v.bar);
      var fd = new FormData();
      fd.append("csrf", form.elements.csrf.value);
      fd.append("user", form.elements.user.value.trim());
      fd.append("format", "json");
      fd.append("url", source);
      fetch(form.getAttribute("action"), { method: "POST", body: fd, credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { return r.text(); })
        .then(function (t) {
          var res;
          try { res = JSON.parse(t)[0]; } catch (e) { res = { error: t || "The fetch failed." }; }
          showResult(v, res);
          if (res && !res.error) urlField.value = "";
        }, function () { showResult(v, { error: "The connection failed." }); });
    }

    ["dragenter", "dragover"].forEach(function (t) {
      zone.addEventListener(t, function (e) { e.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      zone.addEventListener(t, function () { zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) uploadAll(e.dataTransfer.files);
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var byURL = e.submitter ? e.submitter.id === "up-url-submit" : urlField.value.trim() !== "";
      if (byURL || (urlField.value.trim() && !input.files.length)) {
        uploadURL();
      } else if (input.files.length) {
        if (uploadAll(input.files)) input.value = "";
      } else {
        input.focus();
        var v = item("Nothing to upload", 0);
        showResult(v, { error: "Choose at least one image, or give the URL of one." });
      }
    });
  }

  // BlurHash (https://blurha.sh): base-83 digits, a DC colour and AC
  // cosine components, decoded into w×h RGBA pixels.
  var B83 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~";
  function b83(s, from, to) {
    var v = 0;
    for (var i = from; i < to; i++) {
      var d = B83.indexOf(s.charAt(i));
      if (d < 0) throw new Error("not a BlurHash");
      v = v * 83 + d;
    }
    return v;
  }
  function toLinear(c) { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); }
  function toSRGB(v) {
    v = Math.max(0, Math.min(1, v));
    return Math.round(v <= 0.0031308 ? v * 12.92 * 255 : (1.055 * Math.pow(v, 1 / 2.4) - 0.055) * 255);
  }
  function signPow(v, e) { return (v < 0 ? -1 : 1) * Math.pow(Math.abs(v), e); }
  function decodeBlurHash(hash, w, h) {
    var size = b83(hash, 0, 1), nx = size % 9 + 1, ny = Math.floor(size / 9) + 1;
    if (hash.length !== 4 + 2 * nx * ny) throw new Error("BlurHash of the wrong length");
    var maxAC = (b83(hash, 1, 2) + 1) / 166, dc = b83(hash, 2, 6);
    var comps = [[toLinear(dc >> 16), toLinear((dc >> 8) & 255), toLinear(dc & 255)]];
    for (var i = 1; i < nx * ny; i++) {
      var v = b83(hash, 4 + 2 * i, 6 + 2 * i);
      comps.push([Math.floor(v / 361), Math.floor(v / 19) % 19, v % 19].map(function (q) {
        return signPow((q - 9) / 9, 2) * maxAC;
      }));
    }
    var px = new Uint8ClampedArray(w * h * 4);
    for (var y = 0; y < h; y++) {
      for (var x = 0; x < w; x++) {
        var rgb = [0, 0, 0];
        for (var j = 0; j < ny; j++) {
          for (var k = 0; k < nx; k++) {
            var basis = Math.cos(Math.PI * x * k / w) * Math.cos(Math.PI * y * j / h), c = comps[k + j * nx];
            rgb[0] += c[0] * basis; rgb[1] += c[1] * basis; rgb[2] += c[2] * basis;
          }
        }
        var p = 4 * (x + y * w);
        px[p] = toSRGB(rgb[0]); px[p + 1] = toSRGB(rgb[1]); px[p + 2] = toSRGB(rgb[2]); px[p + 3] = 255;
      }
    }
    return px;
  }
  window.vitrine = { decodeBlurHash: decodeBlurHash };

  // Placeholders: every element with data-blurhash (and data-ratio, the
  // original's width/height) gets its BlurHash as background, drawn on a
  // canvas and passed as a blob: URL (the Content-Security-Policy refuses
  // data: URLs). An image drops it once loaded.
  function setupPlaceholders() {
    document.querySelectorAll("[data-blurhash]").forEach(function (el) {
      if (el.tagName === "IMG" && el.complete && el.naturalWidth > 0) return;
      var ratio = parseFloat(el.getAttribute("data-ratio")) || 1;
      var w = ratio >= 1 ? 32 : Math.max(4, Math.round(32 * ratio));
      var h = ratio >= 1 ? Math.max(4, Math.round(32 / ratio)) : 32;
      var canvas = document.createElement("canvas");
      canvas.width = w;
      canvas.height = h;
      try {
        var ctx = canvas.getContext("2d"), data = ctx.createImageData(w, h);
        data.data.set(decodeBlurHash(el.getAttribute("data-blurhash"), w, h));
        ctx.putImageData(data, 0, 0);
      } catch (e) { return; }
      canvas.toBlob(function (blob) {
        if (!blob || (el.tagName === "IMG" && el.complete && el.naturalWidth > 0)) return;
        var u = URL.createObjectURL(blob);
        el.style.backgroundImage = "url(" + u + ")";
        el.setAttribute("data-placeholder", "blurhash");
        if (el.tagName !== "IMG") return;
        var done = function () { el.style.backgroundImage = ""; URL.revokeObjectURL(u); };
        el.addEventListener("load", done, { once: true });
      });
    });
  }

  ready(function () {
    setupMenu();
    setupPlaceholders();
    setupCopy();
    setupPlayground();
    setupUpload();
  });
})();
