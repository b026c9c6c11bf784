"""An example tablectl driver plugin: RFID readers behind a vendor bridge that speaks TCP lines.

The driver (:class:`tablectl_example_driver.driver.TagBridge`) is registered in the entry-point
group ``tablectl.drivers`` under the name ``tag-bridge``, so once this package is installed next
to tablectl a table config can say ``driver = "tag-bridge"``. See ``README.md`` beside this
package and ``docs/drivers.md`` of tablectl ("Writing a driver").
"""

__version__ = "0.1.0"
