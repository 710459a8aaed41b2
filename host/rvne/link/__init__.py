"""The serial link to a device (docs/protocol.md): the line codec
(protocol), the client (device), choosing the port and baud as esptool does
(ports), resetting a board (reset) and replacing its model over the line
(update). Imports io and below."""
