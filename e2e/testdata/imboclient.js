// Drives a running vitrine with the official Imbo JavaScript client
// (npm package `imboclient` 3.x), the way an existing Imbo application would.
// Run by e2e/imboclient_test.go, which installs the package into a temporary
// directory and points NODE_PATH at it. Every step is checked; the first
// failure prints "FAIL <step>: <why>" and exits 1. Success prints "ok <step>"
// per step and ends with "PASS".
//
// Environment: IMBO_HOST (http://127.0.0.1:port), IMBO_USER, IMBO_PUBLIC_KEY,
// IMBO_PRIVATE_KEY, IMBO_IMAGE (path of a PNG), IMBO_WIDTH, IMBO_HEIGHT.
'use strict';

var fs = require('fs');
var crypto = require('crypto');
var Imbo = require('imboclient');

function env(name) {
    var v = process.env[name];
    if (!v) {
        console.log('FAIL setup: ' + name + ' is not set');
        process.exit(2);
    }
    return v;
}

var host = env('IMBO_HOST'),
    user = env('IMBO_USER'),
    publicKey = env('IMBO_PUBLIC_KEY'),
    privateKey = env('IMBO_PRIVATE_KEY'),
    imagePath = env('IMBO_IMAGE'),
    width = parseInt(env('IMBO_WIDTH'), 10),
    height = parseInt(env('IMBO_HEIGHT'), 10);

var imageBytes = fs.readFileSync(imagePath);
var checksum = crypto.createHash('md5').update(imageBytes).digest('hex');

var client = new Imbo.Client({
    hosts: host,
    user: user,
    publicKey: publicKey,
    privateKey: privateKey
});

// describe renders what the server said about a failed request.
function describe(err, res, body) {
    var parts = [];
    if (err) {
        parts.push(String(err.message || err));
    }
    if (res) {
        parts.push('status ' + res.statusCode);
        if (res.headers['x-imbo-error-message']) {
            parts.push('X-Imbo-Error-Message: ' + res.headers['x-imbo-error-message']);
        }
        if (res.request && res.request.uri) {
            parts.push(res.request.method + ' ' + res.request.uri.href);
        }
    }
    if (body !== undefined && body !== null && !Buffer.isBuffer(body)) {
        parts.push('body ' + (typeof body === 'string' ? body : JSON.stringify(body)).slice(0, 300));
    }
    return parts.join('; ');
}

function assert(cond, message) {
    if (!cond) {
        throw new Error(message);
    }
}

function same(a, b) {
    return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v) {
    if (Array.isArray(v)) {
        return v.map(sortKeys);
    }
    if (v && typeof v === 'object') {
        var out = {};
        Object.keys(v).sort().forEach(function(k) {
            out[k] = sortKeys(v[k]);
        });
        return out;
    }
    return v;
}

// pngSize reads width and height from a PNG's IHDR chunk.
function pngSize(buf) {
    var sig = '89504e470d0a1a0a';
    if (!Buffer.isBuffer(buf) || buf.length < 24 || buf.slice(0, 8).toString('hex') !== sig) {
        return null;
    }
    return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

var steps = [];
function step(name, fn) {
    steps.push({ name: name, fn: fn });
}

function runSteps(i) {
    if (i >= steps.length) {
        console.log('PASS');
        return;
    }
    var s = steps[i], finished = false;
    var timer = setTimeout(function() {
        fail(s.name, new Error('no answer within 30 s'));
    }, 30000);
    function done(err) {
        if (finished) {
            return;
        }
        finished = true;
        clearTimeout(timer);
        if (err) {
            return fail(s.name, err);
        }
        console.log('ok ' + s.name);
        runSteps(i + 1);
    }
    try {
        s.fn(function(err) {
            // Assertions inside callbacks throw; report them as this step's failure.
            done(err);
        }, function(f) {
            return function() {
                try {
                    f.apply(null, arguments);
                } catch (e) {
                    done(e);
                }
            };
        });
    } catch (e) {
        done(e);
    }
}

function fail(name, err) {
    console.log('FAIL ' + name + ': ' + (err && err.message ? err.message : String(err)));
    process.exit(1);
}

var state = {};

step('getServerStatus', function(done, guard) {
    client.getServerStatus(guard(function(err, status, res) {
        assert(!err, describe(err, res, status));
        assert(status.status === 200, 'status ' + status.status);
        assert(status.database === true && status.storage === true, 'status body ' + JSON.stringify(status));
        assert(!isNaN(status.date.getTime()), 'status date is not a date: ' + JSON.stringify(status));
        done();
    }));
});

step('addImage (file path)', function(done, guard) {
    client.addImage(imagePath, guard(function(err, imageIdentifier, body, res) {
        assert(!err, describe(err, res, body));
        assert(res.statusCode === 201, 'want 201 for a new image; ' + describe(null, res, body));
        assert(typeof imageIdentifier === 'string' && /^[A-Za-z0-9_-]{1,255}$/.test(imageIdentifier),
            'no usable imageIdentifier: ' + JSON.stringify(body));
        // vitrine's identifiers are the MD5 of the stored bytes (RULINGS.md 5).
        assert(imageIdentifier === checksum, 'imageIdentifier ' + imageIdentifier + ', want MD5 ' + checksum);
        assert(body.width === width && body.height === height && body.extension === 'png',
            'upload body ' + JSON.stringify(body));
        state.id = imageIdentifier;
        done();
    }));
});

step('addImageFromBuffer (same bytes again)', function(done, guard) {
    client.addImageFromBuffer(imageBytes, guard(function(err, imageIdentifier, body, res) {
        assert(!err, describe(err, res, body));
        assert(res.statusCode === 200 || res.statusCode === 201, describe(null, res, body));
        assert(imageIdentifier === state.id, 'imageIdentifier ' + imageIdentifier + ', want ' + state.id);
        done();
    }));
});

step('getImageProperties', function(done, guard) {
    client.getImageProperties(state.id, guard(function(err, props) {
        assert(!err, describe(err, err && err.res));
        var want = { width: width, height: height, filesize: imageBytes.length, extension: 'png', mimetype: 'image/png' };
        assert(same(props, want), 'properties ' + JSON.stringify(props) + ', want ' + JSON.stringify(want));
        done();
    }));
});

step('imageIdentifierExists', function(done, guard) {
    client.imageIdentifierExists(state.id, guard(function(err, exists) {
        assert(!err, describe(err));
        assert(exists === true, 'exists = ' + exists);
        done();
    }));
});

step('imageExists (originalChecksums query)', function(done, guard) {
    client.imageExists(imagePath, guard(function(err, exists, imageIdentifier) {
        assert(!err, describe(err));
        assert(exists === true && imageIdentifier === state.id,
            'exists = ' + exists + ', imageIdentifier ' + imageIdentifier);
        done();
    }));
});

step('replaceMetadata (PUT)', function(done, guard) {
    var data = { title: 'first', tags: { sea: true, count: 2 } };
    client.replaceMetadata(state.id, data, guard(function(err, body, res) {
        assert(!err, describe(err, res, body));
        assert(same(body, data), 'PUT answered ' + JSON.stringify(body));
        done();
    }));
});

step('editMetadata (POST merge)', function(done, guard) {
    client.editMetadata(state.id, { title: 'second', author: 'e2e' }, guard(function(err, body, res) {
        assert(!err, describe(err, res, body));
        var want = { title: 'second', tags: { sea: true, count: 2 }, author: 'e2e' };
        assert(same(body, want), 'POST answered ' + JSON.stringify(body) + ', want ' + JSON.stringify(want));
        done();
    }));
});

step('getMetadata', function(done, guard) {
    client.getMetadata(state.id, guard(function(err, body, res) {
        assert(!err, describe(err, res, body));
        var want = { title: 'second', tags: { sea: true, count: 2 }, author: 'e2e' };
        assert(same(body, want), 'GET answered ' + JSON.stringify(body));
        done();
    }));
});

step('getImageUrl().thumbnail().png() fetched', function(done, guard) {
    var url = client.getImageUrl(state.id).thumbnail({ width: 40, height: 30 }).png();
    state.thumbUrl = url;
    client.getImageDataFromUrl(url, guard(function(err, data) {
        assert(!err, describe(err) + ' for ' + url.toString());
        var size = pngSize(data);
        assert(size && size.width === 40 && size.height === 30,
            'want a 40x30 PNG from ' + url.toString() + ', got ' + JSON.stringify(size));
        done();
    }));
});

step('getImageUrl().maxSize().jpg() fetched', function(done, guard) {
    var url = client.getImageUrl(state.id).maxSize({ width: Math.floor(width / 2) }).desaturate().jpg();
    client.getImageDataFromUrl(url, guard(function(err, data) {
        assert(!err, describe(err) + ' for ' + url.toString());
        assert(Buffer.isBuffer(data) && data[0] === 0xff && data[1] === 0xd8,
            'want a JPEG from ' + url.toString());
        done();
    }));
});

step('getImageData (original bytes)', function(done, guard) {
    client.getImageData(state.id, guard(function(err, data) {
        assert(!err, describe(err));
        assert(Buffer.isBuffer(data) && data.equals(imageBytes), 'the original bytes differ');
        done();
    }));
});

step('getImages', function(done, guard) {
    client.getImages(guard(function(err, images, search, res) {
        assert(!err, describe(err, res));
        assert(Array.isArray(images) && search && search.hits >= 1, 'images ' + JSON.stringify(images) +
            ', search ' + JSON.stringify(search));
        var mine = images.filter(function(i) {
            return i.imageIdentifier === state.id;
        })[0];
        assert(mine, 'the image is not listed: ' + JSON.stringify(images));
        assert(mine.user === user && mine.width === width && mine.height === height && mine.mimeType === 'image/png',
            'listing entry ' + JSON.stringify(mine));
        done();
    }));
});

step('getImages with a query (metadata, limit, ids)', function(done, guard) {
    var q = new Imbo.Query().metadata(true).limit(5).ids([state.id]);
    client.getImages(q, guard(function(err, images, search, res) {
        assert(!err, describe(err, res));
        assert(images.length === 1 && search.hits === 1 && search.limit === 5, 'images ' + JSON.stringify(images) +
            ', search ' + JSON.stringify(search));
        assert(images[0].metadata && images[0].metadata.title === 'second', 'metadata ' + JSON.stringify(images[0]));
        done();
    }));
});

step('getUserInfo', function(done, guard) {
    client.getUserInfo(guard(function(err, info, res) {
        assert(!err, describe(err, res, info));
        assert(info.user === user && info.numImages >= 1, 'user info ' + JSON.stringify(info));
        assert(!isNaN(info.lastModified.getTime()), 'lastModified ' + info.lastModified);
        done();
    }));
});

step('getShortUrl and fetch it', function(done, guard) {
    client.getShortUrl(state.thumbUrl, guard(function(err, shortUrl) {
        assert(!err, describe(err));
        assert(/^[a-zA-Z0-9]{7}$/.test(shortUrl.getId()), 'short URL id ' + shortUrl.getId());
        client.getImageDataFromUrl(shortUrl, guard(function(err2, data) {
            assert(!err2, describe(err2) + ' for ' + shortUrl.toString());
            var size = pngSize(data);
            assert(size && size.width === 40 && size.height === 30,
                'want the 40x30 PNG thumbnail from ' + shortUrl.toString() + ', got ' + JSON.stringify(size));
            done();
        }));
    }));
});

step('deleteMetadata', function(done, guard) {
    client.deleteMetadata(state.id, guard(function(err, res, body) {
        assert(!err, describe(err, res, body));
        client.getMetadata(state.id, guard(function(err2, meta, res2) {
            assert(!err2, describe(err2, res2, meta));
            assert(same(meta, {}), 'metadata after delete ' + JSON.stringify(meta));
            done();
        }));
    }));
});

step('deleteImage', function(done, guard) {
    client.deleteImage(state.id, guard(function(err, res, body) {
        assert(!err, describe(err, res, body));
        assert(res.statusCode === 200, describe(null, res, body));
        done();
    }));
});

step('image gone after delete', function(done, guard) {
    client.imageIdentifierExists(state.id, guard(function(err, exists) {
        assert(!err, describe(err));
        assert(exists === false, 'imageIdentifierExists = ' + exists + ' after delete');
        client.headImage(state.id, guard(function(err2, res) {
            assert(res && res.statusCode === 404, 'HEAD after delete: ' + describe(err2, res));
            done();
        }));
    }));
});

console.log('imboclient ' + Imbo.Version + ' as public key ' + publicKey + ' on user ' + user);
runSteps(0);
