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

  // Upload: drag and drop, several files at once, one request per file with
  // a progress bar each.
  function setupUpload() {
    var form = document.getElementById("upload-form");
    if (!form) return;
    var zone = document.getElementById("dropzone");
    var input = document.getElementById("up-files");
    var list = document.getElementById("upload-list");
    function uploadOne(file) {
      var li = document.createElement("li");
      li.className = "card upload-item";
      var name = document.createElement("span");
      name.className = "upload-name";
      name.textContent = file.name;
      var bar = document.createElement("progress");
      bar.max = 100;
      bar.value = 0;
      bar.setAttribute("aria-label", "Uploading " + file.name);
      li.appendChild(name);
      li.appendChild(bar);
      list.appendChild(li);
      var fd = new FormData();
      fd.append("csrf", form.elements.csrf.value);
      fd.append("user", form.elements.user.value);
      fd.append("format", "json");
      fd.append("images", file, file.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action"));
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) bar.value = Math.round(100 * e.loaded / e.total);
      });
      xhr.addEventListener("load", function () {
        var res = null;
        try { res = JSON.parse(xhr.responseText)[0]; } catch (e) { res = { error: xhr.responseText || "Upload failed" }; }
        li.removeChild(bar);
        if (res && !res.error) {
          var thumb = document.createElement("img");
          thumb.src = res.thumb; thumb.alt = ""; thumb.width = 56; thumb.height = 56;
          li.insertBefore(thumb, name);
          var link = document.createElement("a");
          link.href = res.href; link.className = "mono"; link.textContent = res.id;
          var ok = document.createElement("span");
          if (res.existed) {
            ok.className = "badge"; ok.textContent = "Already existed";
          } else {
            ok.className = "badge badge-ok"; ok.textContent = "Uploaded";
          }
          li.appendChild(link);
          li.appendChild(ok);
        } else {
          var msg = document.createElement("span");
          msg.className = "field-error";
          msg.textContent = (res && res.error) || "Upload failed";
          li.appendChild(msg);
        }
      });
      xhr.addEventListener("error", function () {
        li.removeChild(bar);
        var msg = document.createElement("span");
        msg.className = "field-error";
        msg.textContent = "The connection failed.";
        li.appendChild(msg);
      });
      xhr.send(fd);
    }
    function uploadAll(files) {
      if (!form.elements.user.reportValidity()) return;
      Array.prototype.forEach.call(files, uploadOne);
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
      if (input.files.length) {
        uploadAll(input.files);
        input.value = "";
      } else {
        input.reportValidity();
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
    setupPlaceholders();
    setupCopy();
    setupPlayground();
    setupUpload();
  });
})();
