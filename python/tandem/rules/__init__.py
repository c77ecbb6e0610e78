"""Rule IR and its formats (ovs-ofctl text, OpenFlow 1.3 wire)."""
