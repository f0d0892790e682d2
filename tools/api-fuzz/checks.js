// Collection test script (runs after every request): the oracles that hold
// whatever the fuzzed input was. A 5xx is a bug; every error the server
// answers is an RFC 9457 problem whose status matches the response's.
pm.test('[fuzz] not a server error', function () {
  pm.expect(pm.response.code, pm.request.method + ' ' + pm.request.url.toString()).to.be.below(500);
});
// A URL with a broken percent escape is refused by Go's HTTP server itself
// (400 text/plain) before it reaches groundgate's router: not an API answer.
const malformedURL = /%(?![0-9A-Fa-f]{2})/.test(pm.request.url.toString());
if (pm.response.code >= 400 && !malformedURL) {
  pm.test('[fuzz] an error is application/problem+json with its status', function () {
    pm.expect(pm.response.headers.get('Content-Type') || '').to.include('application/problem+json');
    const p = pm.response.json();
    pm.expect(p.status).to.equal(pm.response.code);
    pm.expect(p.type).to.match(/^urn:groundgate:problem:[a-z-]+$/);
  });
}
