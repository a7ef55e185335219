package conformance.flink;

import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.runtime.event.RuntimeEvent;

import java.io.IOException;

/**
 * An ordinary (non-priority) upstream event of the model (`e0`, `e1`, ...). Flink serializes an
 * event it does not know by class name and {@link #write}, and deserializes it with the channel's
 * class loader, so it travels through the subpartition, the wire and the consumer's channel like
 * any other event. The tag is `<channel>/<name>`, so that an element that reaches the wrong
 * channel is shown as unknown.
 */
public class ModelEvent extends RuntimeEvent {
    private String tag = "";

    public ModelEvent() {}

    public ModelEvent(String tag) {
        this.tag = tag;
    }

    public String tag() {
        return tag;
    }

    @Override
    public void write(DataOutputView out) throws IOException {
        out.writeUTF(tag);
    }

    @Override
    public void read(DataInputView in) throws IOException {
        tag = in.readUTF();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ModelEvent && ((ModelEvent) o).tag.equals(tag);
    }

    @Override
    public int hashCode() {
        return tag.hashCode();
    }

    @Override
    public String toString() {
        return "ModelEvent(" + tag + ")";
    }
}
